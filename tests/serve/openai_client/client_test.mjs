// The official openai npm client (pinned in package-lock.json) against a
// running `atlas serve`: every OpenAI endpoint, streaming included, and the
// errors it raises; fetch for /health, /metrics and /admin.
//   node client_test.mjs NODE_MODULES_DIR BASE_URL API_KEY MODEL EXPECTED_TEXT
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, base, key, model, expected] = process.argv.slice(2);
const { default: OpenAI } = await import(
  pathToFileURL(path.join(modules, "openai", "index.mjs")).href);

let fails = 0;
function check(name, cond, detail) {
  console.log(`${cond ? "ok  " : "FAIL"} ${name}${cond ? "" : "  " + JSON.stringify(detail)}`);
  if (!cond) fails++;
}

const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0, timeout: 60000 });

const models = await client.models.list();
check("models.list names the model", models.data.map((m) => m.id).join() === model, models.data);
const one = await client.models.retrieve(model);
check("models.retrieve", one.id === model, one);

const c = await client.completions.create(
  { model, prompt: "Hello wörld", max_tokens: 12, temperature: 0 });
check("completions.create: atlas run's greedy text", c.choices[0].text === expected, c);
check("completions.create: usage", c.usage.completion_tokens === 12, c.usage);

let text = "";
let usage = null;
let finish = null;
const cs = await client.completions.create({ model, prompt: "Hello wörld", max_tokens: 12,
  temperature: 0, stream: true, stream_options: { include_usage: true } });
for await (const chunk of cs) {
  if (chunk.choices.length) {
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  if (chunk.usage) usage = chunk.usage;
}
check("completions stream: the same text", text === expected, text);
check("completions stream: finish_reason and usage",
  finish === "length" && usage?.total_tokens === usage?.prompt_tokens + 12, { finish, usage });

const msgs = [{ role: "user", content: "hi there" }];
const chat = await client.chat.completions.create(
  { model, messages: msgs, max_completion_tokens: 6, temperature: 0, logprobs: true,
    top_logprobs: 4, n: 2 });
check("chat.completions.create: two choices",
  chat.choices.length === 2 && chat.choices[0].message.role === "assistant", chat);
check("chat.completions.create: greedy choices agree",
  chat.choices[0].message.content === chat.choices[1].message.content, chat.choices);
check("chat logprobs", chat.choices[0].logprobs.content.length === 6, chat.choices[0].logprobs);
const tops = chat.choices[0].logprobs.content.map((e) => e.top_logprobs);
check("chat top_logprobs: 4 alternatives a token, largest first, the greedy pick first",
  tops.every((t, i) => t.length === 4 &&
    t.every((a, k) => k === 0 || a.logprob <= t[k - 1].logprob) &&
    Math.abs(t[0].logprob - chat.choices[0].logprobs.content[i].logprob) < 1e-6),
  tops[0]);
check("n=2 forked choices: the same logprobs (one prefill, greedy)",
  JSON.stringify(chat.choices[0].logprobs) === JSON.stringify(chat.choices[1].logprobs));

let streamedLps = [];
const lpStream = await client.chat.completions.create(
  { model, messages: msgs, max_completion_tokens: 6, temperature: 0, logprobs: true,
    top_logprobs: 4, stream: true });
for await (const chunk of lpStream) {
  for (const ch of chunk.choices) streamedLps.push(...(ch.logprobs?.content ?? []));
}
check("chat top_logprobs streamed: the same entries",
  JSON.stringify(streamedLps) === JSON.stringify(chat.choices[0].logprobs.content),
  streamedLps[0]);

const cl = await client.completions.create(
  { model, prompt: "Hello wörld", max_tokens: 4, temperature: 0, logprobs: 2, n: 3 });
check("completions logprobs 2, n 3: three choices with a token_logprob and alternatives each",
  cl.choices.length === 3 && cl.choices.every((c) =>
    c.logprobs.token_logprobs.length === 4 && c.logprobs.top_logprobs.length === 4),
  cl.choices[0].logprobs);

let delta = "";
let roleSeen = false;
const stream = await client.chat.completions.create(
  { model, messages: msgs, max_completion_tokens: 6, temperature: 0, stream: true });
for await (const chunk of stream) {
  for (const ch of chunk.choices) {
    roleSeen ||= ch.delta.role === "assistant";
    delta += ch.delta.content ?? "";
  }
}
check("chat stream: role, then the same message",
  roleSeen && delta === chat.choices[0].message.content, delta);

async function status(promise) {
  try {
    await promise;
    return 200;
  } catch (e) {
    return e instanceof OpenAI.APIError ? e.status : String(e);
  }
}
check("a bad field is a 400 (BadRequestError)", await status(
  client.completions.create({ model, prompt: "x", temperature: -1 })) === 400);
check("an unknown model is a 404", await status(
  client.completions.create({ model: "nope", prompt: "x" })) === 404);
const anon = new OpenAI({ apiKey: "wrong", baseURL: `${base}/v1`, maxRetries: 0 });
check("a wrong key is a 401", await status(anon.models.list()) === 401);

const health = await fetch(`${base}/health`);
check("/health 200", health.status === 200);
const metrics = await (await fetch(`${base}/metrics`)).text();
check("/metrics counts the client's requests",
  /atlas_requests_total\{endpoint="\/v1\/chat\/completions",status="200"\} 3/.test(metrics));
const report = await fetch(`${base}/admin/report`, { headers: { Authorization: `Bearer ${key}` } });
check("/admin/report 200", report.status === 200 && (await report.json()).live_bytes > 0);

console.log(fails ? `${fails} failed` : "all passed");
process.exit(fails ? 1 : 0);
