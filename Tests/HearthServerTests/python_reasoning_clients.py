"""Reasoning models through the real `openai` and `ollama` Python clients.

Usage: python_reasoning_clients.py BASE_URL EXPECTED_JSON
EXPECTED_JSON holds the SDK's own greedy thoughts and answers for each request, computed by the
Swift test that runs this. Exits non-zero with the failed check's message.
"""
import json
import sys

import ollama
import openai

base, expected_path = sys.argv[1], sys.argv[2]
# Every request may wait minutes: the server shares a 2-core machine with the whole suite.
TIMEOUT = 600
with open(expected_path) as f:
    expected = json.load(f)
checks = []


def check(name, condition, detail=""):
    if not condition:
        raise SystemExit(f"FAILED {name}: {detail}")
    checks.append(name)


def streamed_openai(**request):
    """Thoughts and answer gathered from the deltas, whether thoughts came after the answer began, the finish reason."""
    reasoning, content, late, finish = "", "", False, None
    for chunk in client.chat.completions.create(stream=True, **request):
        for choice in chunk.choices:
            piece = getattr(choice.delta, "reasoning_content", None)
            if piece:
                reasoning += piece
                late = late or bool(content)
            if choice.delta.content:
                content += choice.delta.content
            if choice.finish_reason:
                finish = choice.finish_reason
    return reasoning, content, late, finish


# --- openai ---
client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=TIMEOUT)
want = expected["chat"]
request = dict(model="smollm2-thinking", messages=expected["messages"], temperature=0, max_tokens=80)
chat = client.chat.completions.create(**request)
message = chat.choices[0].message
check("openai reasoning_content", getattr(message, "reasoning_content", None) == want["reasoning"], repr(message))
check("openai content is the answer", message.content == want["answer"], repr(message.content))
details = chat.usage.completion_tokens_details
check("openai reasoning tokens", details is not None and 0 < details.reasoning_tokens < chat.usage.completion_tokens, chat.usage)

reasoning, content, late, finish = streamed_openai(**request)
check("openai streamed reasoning_content", reasoning == want["reasoning"], repr(reasoning))
check("openai streamed content", content == want["answer"], repr(content))
check("openai streamed thoughts first", not late)
check("openai streamed finish", finish == ("length" if want["finish"] == "length" else "stop"), finish)

off = expected["chat_off"]
request_off = dict(request, max_tokens=12, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
chat = client.chat.completions.create(**request_off)
check("openai enable_thinking false", getattr(chat.choices[0].message, "reasoning_content", None) is None
      and chat.choices[0].message.content == off["answer"], repr((chat.choices[0].message, off)))
reasoning, content, _, _ = streamed_openai(**request_off)
check("openai streamed enable_thinking false", reasoning == "" and content == off["answer"], repr((reasoning, content)))

tiny = expected["tiny"]
question = [{"role": "user", "content": expected["question"]}]
chat = client.chat.completions.create(model="qwen3-r1", messages=question, temperature=0, max_tokens=16)
check("openai thoughts cut by max_tokens", chat.choices[0].finish_reason == "length"
      and getattr(chat.choices[0].message, "reasoning_content", None) == tiny["reasoning"]
      and chat.choices[0].message.content == tiny["answer"], repr(chat.choices[0]))
reasoning, content, _, finish = streamed_openai(model="qwen3-r1", messages=question, temperature=0, max_tokens=16)
check("openai streamed thoughts cut by max_tokens", (reasoning, content, finish) == (tiny["reasoning"], tiny["answer"], "length"),
      repr((reasoning, content, finish)))

try:
    client.chat.completions.create(model="smollm2-thinking", messages=question, extra_body={"chat_template_kwargs": {"enable_thinking": "no"}})
    check("openai bad enable_thinking", False, "no error")
except openai.BadRequestError as error:
    check("openai bad enable_thinking", "enable_thinking" in str(error), str(error))

# --- ollama ---
o = ollama.Client(host=base, timeout=TIMEOUT)
options = {"temperature": 0, "num_predict": 80}
reply = o.chat(model="smollm2-thinking", messages=expected["ollama_messages"], options=options, think=True)
check("ollama thinking", reply.message.thinking == want["reasoning"], repr(reply.message))
check("ollama content is the answer", reply.message.content == want["answer"], repr(reply.message.content))

thinking, content, late = "", "", False
for part in o.chat(model="smollm2-thinking", messages=expected["ollama_messages"], options=options, think=True, stream=True):
    if part.message.thinking:
        thinking += part.message.thinking
        late = late or bool(content)
    content += part.message.content or ""
check("ollama streamed thinking", thinking == want["reasoning"] and content == want["answer"], repr((thinking, content)))
check("ollama streamed thoughts first", not late)

reply = o.chat(model="smollm2-thinking", messages=expected["ollama_messages"], options={"temperature": 0, "num_predict": 12}, think=False)
check("ollama think false", not reply.message.thinking and reply.message.content == off["answer"], repr(reply.message))

generate = expected["generate"]
generated = o.generate(model="smollm2-thinking", prompt=expected["question"], options={"temperature": 0, "num_predict": 40}, think=True)
check("ollama generate thinking", (generated.thinking or "") == generate["reasoning"] and generated.response == generate["answer"],
      repr(generated))
thinking, response = "", ""
for part in o.generate(model="smollm2-thinking", prompt=expected["question"], options={"temperature": 0, "num_predict": 40}, think=True,
                       stream=True):
    thinking += part.thinking or ""
    response += part.response or ""
check("ollama streamed generate thinking", (thinking, response) == (generate["reasoning"], generate["answer"]), repr((thinking, response)))

reply = o.chat(model="qwen3-r1", messages=question, options={"temperature": 0, "num_predict": 16}, think=True)
check("ollama thoughts cut by num_predict", reply.done_reason == "length" and reply.message.thinking == tiny["reasoning"]
      and reply.message.content == tiny["answer"], repr(reply))

try:
    o.chat(model="smollm2", messages=question, think=True)
    check("ollama think on a model that does not think", False, "no error")
except ollama.ResponseError as error:
    check("ollama think on a model that does not think", error.status_code == 400 and "does not support thinking" in str(error), str(error))

check("ollama show capabilities", "thinking" in (o.show("smollm2-thinking").capabilities or [])
      and "thinking" not in (o.show("smollm2").capabilities or []), o.show("smollm2-thinking").capabilities)

print(json.dumps({"passed": checks}))
