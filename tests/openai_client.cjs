// The official `openai` npm client against the router's HTTP frontend (//tests:openai_test):
//   node openai_client.cjs OPENAI_PACKAGE_DIR BASE_URL MODEL
// Completions and chat, each streamed and not: greedy, so both must give the same text; usage,
// finish reasons, /v1/models, and a refused parameter as the client's BadRequestError. Prints
// one JSON line with what it saw; exits 1 on any mismatch.
"use strict";
const { OpenAI } = require(process.argv[2]);
const [baseURL, model] = [process.argv[3], process.argv[4]];
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const problems = [];
const check = (ok, what) => { if (!ok) problems.push(what); };

async function main() {
  const common = { model, max_tokens: 12, temperature: 0, ignore_eos: true };
  const whole = await client.completions.create({ ...common, prompt: "The history of" });
  check(whole.object === "text_completion", "completion object");
  check(whole.usage.completion_tokens === 12, `completion usage ${JSON.stringify(whole.usage)}`);
  let streamed = "";
  for await (const chunk of await client.completions.create(
      { ...common, prompt: "The history of", stream: true })) {
    streamed += chunk.choices[0]?.text ?? "";
  }
  check(streamed === whole.choices[0].text, `completion stream ${JSON.stringify(streamed)} vs ` +
        JSON.stringify(whole.choices[0].text));

  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello" }];
  const chat = await client.chat.completions.create({ ...common, messages });
  check(chat.object === "chat.completion", "chat object");
  check(chat.choices[0].message.role === "assistant", "chat role");
  check(chat.choices[0].finish_reason === "length", "chat finish_reason");
  let chatStreamed = "", usage = null, role = null;
  for await (const chunk of await client.chat.completions.create(
      { ...common, messages, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices[0]?.delta;
    if (delta?.role) role = delta.role;
    chatStreamed += delta?.content ?? "";
  }
  check(chatStreamed === chat.choices[0].message.content, `chat stream ${JSON.stringify(chatStreamed)}`);
  check(role === "assistant", "chat stream role");
  check(usage && usage.completion_tokens === 12, `chat stream usage ${JSON.stringify(usage)}`);

  const models = await client.models.list();
  check(models.data.some((m) => m.id === model), "models list");
  let refused = null;
  try {
    await client.chat.completions.create({ ...common, messages, n: 2 });
  } catch (e) {
    refused = e;
  }
  check(refused instanceof OpenAI.BadRequestError, `n=2 not refused as 400: ${refused}`);
  check(refused && /not supported/.test(refused.message), `n=2 message: ${refused?.message}`);
  console.log(JSON.stringify({ completion: whole.choices[0].text, chat: chat.choices[0].message.content,
                               problems }));
  process.exit(problems.length === 0 ? 0 : 1);
}
main().catch((e) => { console.error(e); process.exit(1); });
