// Renders chat-template cases with @huggingface/jinja (the reference for //tests:chat_template_test):
//   node chat_template_ref.cjs HF_JINJA_INDEX_CJS tokenizer_config.json < cases.jsonl
// One JSON line out per case: {"text": ...} or {"error": ...}; the variables are those
// transformers' apply_chat_template passes (messages, add_generation_prompt, bos/eos tokens,
// extra keywords); @huggingface/jinja defines raise_exception itself.
"use strict";
const fs = require("fs");
const { Template } = require(process.argv[2]);
const config = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const token = (t) => (t == null ? "" : typeof t === "string" ? t : t.content);
let source = config.chat_template;
if (Array.isArray(source)) source = source.find((t) => t.name === "default").template;
const template = new Template(source);
const lines = fs.readFileSync(0, "utf8").split("\n").filter((l) => l.trim() !== "");
for (const line of lines) {
  const c = JSON.parse(line);
  try {
    const text = template.render({
      ...(c.extra || {}),
      messages: c.messages,
      add_generation_prompt: !!c.add_generation_prompt,
      bos_token: token(config.bos_token),
      eos_token: token(config.eos_token),
    });
    console.log(JSON.stringify({ text }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e.message) }));
  }
}
