// The chat page of `submoe serve` (docs/serving.md): streams answers from
// /v1/chat/completions (the model's chat template renders the conversation) as
// server-sent events, shows tokens/s and the expert-cache hit rate (from
// /metrics). A model without a chat template gets the conversation as a plain
// transcript ("User: ...", "Assistant: ...") on /v1/completions instead, its
// answer stopping at the next "User:" line.
"use strict";

const $ = (id) => document.getElementById(id);
const messages = [];  // {role: "user" | "assistant", content}
let modelId = null;
let controller = null;  // AbortController of the running request
let useTranscript = false;  // the server has no chat template: fall back to /v1/completions

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api_key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

function addBubble(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  div.appendChild(body);
  $("log").appendChild(div);
  div.scrollIntoView({ block: "end" });
  return div;
}

function setMeta(bubble, text) {
  let meta = bubble.querySelector(".meta");
  if (!meta) {
    meta = document.createElement("span");
    meta.className = "meta";
    bubble.appendChild(meta);
  }
  meta.textContent = text;
}

function transcript() {
  let p = "";
  for (const m of messages) p += (m.role === "user" ? "User: " : "Assistant: ") + m.content.trim() + "\n";
  return p + "Assistant:";
}

function numberField(id, lo, hi) {
  const v = Number($(id).value);
  if (!Number.isFinite(v) || v < lo || v > hi) throw new Error(`${id.replace("_", " ")} must be within [${lo}, ${hi}]`);
  return v;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ? j.error.message : "HTTP " + r.status);
    modelId = j.data[0].id;
    const ctx = j.data[0].context_length ? `, context ${j.data[0].context_length}` : "";
    $("model").textContent = `${modelId}${ctx}`;
  } catch (e) {
    $("model").textContent = "model unavailable: " + e.message;
  }
}

// Parses the Prometheus text of /metrics into {name: value} (samples without labels).
function parseMetrics(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+) ([0-9.eE+-]+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

async function cacheLine() {
  try {
    const m = parseMetrics(await (await fetch("/metrics")).text());
    const hits = m.submoe_expert_cache_hits_total, misses = m.submoe_expert_cache_misses_total;
    if (hits === undefined) return "experts resident (no expert cache)";
    const total = hits + misses;
    return total > 0 ? `expert cache hit rate ${(100 * hits / total).toFixed(1)}%` : "expert cache: no lookups yet";
  } catch (e) {
    return "metrics unavailable";
  }
}

async function send(text) {
  let temperature, maxTokens;
  try {
    temperature = numberField("temperature", 0, 2);
    maxTokens = Math.round(numberField("max_tokens", 1, 4096));
  } catch (e) {
    $("status").textContent = e.message;
    return;
  }
  messages.push({ role: "user", content: text });
  addBubble("user", text);
  const bubble = addBubble("assistant", "");
  const body = bubble.querySelector(".text");
  const reply = { role: "assistant", content: "" };
  controller = new AbortController();
  $("send").disabled = true;
  $("stop").disabled = false;
  $("status").textContent = "generating…";
  const started = performance.now();
  let firstToken = null, tokens = 0, usage = null, finish = null;
  try {
    const request = () => {
      const common = { model: modelId || undefined, max_tokens: maxTokens, temperature, stream: true,
                       stream_options: { include_usage: true } };
      if (useTranscript)
        return ["/v1/completions", { ...common, prompt: transcript(), stop: ["\nUser:"] }];
      return ["/v1/chat/completions", { ...common, messages }];
    };
    let r;
    for (;;) {
      const [route, payload] = request();
      r = await fetch(route, { method: "POST", headers: headers(), signal: controller.signal,
                               body: JSON.stringify(payload) });
      if (r.ok) break;
      const j = await r.json().catch(() => ({}));
      if (!useTranscript && j.error && j.error.code === "chat_template_unavailable") {
        useTranscript = true;
        $("model").textContent += " (no chat template: plain transcript)";
        continue;
      }
      throw new Error(j.error ? j.error.message : "HTTP " + r.status);
    }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const before = reply.content.length;
      let cut;
      while ((cut = pending.indexOf("\n\n")) >= 0) {
        const event = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) usage = j.usage;
        for (const c of j.choices || []) {
          const piece = c.delta ? c.delta.content : c.text;  // chat chunk or completion chunk
          if (piece) {
            if (firstToken === null) firstToken = performance.now();
            tokens++;
            reply.content += piece;
            body.textContent = reply.content.replace(/^\s+/, "");
          }
          if (c.finish_reason) finish = c.finish_reason;
        }
        bubble.scrollIntoView({ block: "end" });
      }
      // How many network reads brought text (the browser test checks it streamed).
      if (reply.content.length > before) bubble.dataset.reads = String(Number(bubble.dataset.reads || 0) + 1);
    }
  } catch (e) {
    if (e.name !== "AbortError") {
      bubble.classList.add("error");
      body.textContent = (reply.content ? reply.content + "\n" : "") + "error: " + e.message;
    } else {
      finish = "stopped";
    }
  }
  const completion = usage ? usage.completion_tokens : tokens;
  const decodeSeconds = firstToken === null ? 0 : (performance.now() - firstToken) / 1000;
  const rate = completion > 1 && decodeSeconds > 0 ? ((completion - 1) / decodeSeconds).toFixed(1) : "-";
  const ttft = firstToken === null ? "-" : ((firstToken - started) / 1000).toFixed(2) + " s";
  const line = `${completion} tokens, ${rate} tokens/s, first token ${ttft}` + (finish ? `, ${finish}` : "") +
    "; " + (await cacheLine());
  setMeta(bubble, line);
  $("status").textContent = line;
  messages.push(reply);
  controller = null;
  $("send").disabled = false;
  $("stop").disabled = true;
}

$("composer").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("input").value.trim();
  if (!text || controller) return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    $("composer").requestSubmit();
  }
});
$("stop").addEventListener("click", () => controller && controller.abort());
$("clear").addEventListener("click", () => {
  messages.length = 0;
  $("log").textContent = "";
  $("status").textContent = "idle";
});
$("api_key").addEventListener("change", loadModel);
loadModel();
