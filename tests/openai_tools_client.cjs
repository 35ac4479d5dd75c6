// The official `openai` npm client's function calling against the router's HTTP door
// (//tests:openai_test, over tests/testing/scripted_door — a model scripted to call
// get_weather for Paris and Tokyo, then answer with the results it was sent):
//   node openai_tools_client.cjs OPENAI_PACKAGE_DIR BASE_URL MODEL
// The calls whole and streamed (the client's own stream assembly), then the client's tool runner
// round-trips the conversation — it runs the function, sends the results back as tool messages
// beside the assistant's tool_calls, and reads the answer — streamed and not. Prints one JSON
// line; exits 1 on any mismatch.
"use strict";
const { OpenAI } = require(process.argv[2]);
const [baseURL, model] = [process.argv[3], process.argv[4]];
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const problems = [];
const check = (ok, what) => { if (!ok) problems.push(what); };

const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const tools = [{ type: "function",
                 function: { name: "get_weather", description: "The weather in a city", parameters } }];
const messages = [{ role: "user", content: "What is the weather in Paris and Tokyo?" }];
const weather = { Paris: "18 C", Tokyo: "25 C" };

function checkCalls(calls, how) {
  check(Array.isArray(calls) && calls.length === 2, `${how}: ${JSON.stringify(calls)}`);
  if (!Array.isArray(calls) || calls.length !== 2) return;
  ["Paris", "Tokyo"].forEach((city, i) => {
    check(calls[i].type === "function" && calls[i].function.name === "get_weather",
          `${how} call ${i}: ${JSON.stringify(calls[i])}`);
    check(JSON.parse(calls[i].function.arguments).city === city, `${how} call ${i} arguments`);
    check(/^call_/.test(calls[i].id), `${how} call ${i} id ${calls[i].id}`);
  });
  check(calls[0].id !== calls[1].id, `${how}: the ids repeat`);
}

async function main() {
  const whole = await client.chat.completions.create({ model, messages, tools });
  check(whole.choices[0].finish_reason === "tool_calls", `finish_reason ${whole.choices[0].finish_reason}`);
  check(whole.choices[0].message.content === null, "content beside the calls");
  checkCalls(whole.choices[0].message.tool_calls, "whole");

  const stream = client.chat.completions.stream({ model, messages, tools });
  const streamed = await stream.finalChatCompletion();
  check(streamed.choices[0].finish_reason === "tool_calls", "streamed finish_reason");
  checkCalls(streamed.choices[0].message.tool_calls, "streamed");

  const named = await client.chat.completions.create(
      { model, messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } } });
  checkCalls(named.choices[0].message.tool_calls, "named tool_choice");

  const runnable = [{ type: "function", function: {
    name: "get_weather", description: "The weather in a city", parameters, parse: JSON.parse,
    function: ({ city }) => weather[city] ?? "unknown" } }];
  const answers = {};
  for (const stream of [false, true]) {
    const runner = client.chat.completions.runTools({ model, messages, tools: runnable, stream });
    const content = await runner.finalContent();
    answers[stream ? "streamed" : "whole"] = content;
    check(content === "Results: 18 C; 25 C", `runTools (stream ${stream}): ${JSON.stringify(content)}`);
    const sent = runner.messages.filter((m) => m.role === "tool").map((m) => m.content);
    check(JSON.stringify(sent) === JSON.stringify(["18 C", "25 C"]), `tool messages ${JSON.stringify(sent)}`);
  }

  let refused = null;
  try {
    await client.chat.completions.create({ model, messages, tools, tool_choice: "sometimes" });
  } catch (e) {
    refused = e;
  }
  check(refused instanceof OpenAI.BadRequestError && refused.param === "tool_choice",
        `a bad tool_choice: ${refused}`);
  console.log(JSON.stringify({ calls: whole.choices[0].message.tool_calls.length, answers, problems }));
  process.exit(problems.length === 0 ? 0 : 1);
}
main().catch((e) => { console.error(e); process.exit(1); });
