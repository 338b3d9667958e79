"""Tool calling and schema-held answers through the real `openai` and `ollama` Python clients.

Usage: python_tool_clients.py BASE_URL MODEL RUNS
For MODEL: a complete tool loop with two tools (a parallel call, streamed and not), and RUNS
sampled requests at temperature 1.0 whose every call's arguments validate against the tool's
JSON Schema (Python's jsonschema); a response_format json_schema answer and an Ollama `format`
schema answer that validate; Ollama's tool calls. Exits non-zero with the failed check.
"""
import concurrent.futures
import json
import sys

import jsonschema
import ollama
import openai

base, model, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Every request may wait minutes: the server shares a 2-core machine with the whole suite.
TIMEOUT = 600
checks = []


def check(name, condition, detail=""):
    if not condition:
        raise SystemExit(f"FAILED {name}: {detail}")
    checks.append(name)


WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 40},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 40}, "hour24": {"type": "boolean"}},
    "required": ["city"],
    "additionalProperties": False,
}
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description": "The local time in a city", "parameters": TIME}},
]
QUESTION = [{"role": "user", "content": "What is the weather and the local time in Paris?"}]


def validate(name, arguments, schemas=SCHEMAS):
    """The call names a tool and its arguments (JSON text) validate against its schema."""
    check("tool name", name in schemas, name)
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    try:
        jsonschema.validate(args, schemas[name])
    except jsonschema.ValidationError as error:
        raise SystemExit(f"FAILED arguments of {name}: {error.message}: {arguments!r}")
    return args


def run_tool(name, args):
    return f"Sunny, 21 degrees in {args['city']}." if name == "get_weather" else f"It is 14:05 in {args['city']}."


client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=TIMEOUT)

# --- A complete loop, not streamed: the model must call, the tools run, the model answers. ---
first = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS, tool_choice="required",
                                       parallel_tool_calls=True, temperature=0, max_tokens=1000)
choice = first.choices[0]
check("finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)
calls = choice.message.tool_calls or []
check("calls made", len(calls) >= 1, choice.message)
messages = QUESTION + [choice.message.model_dump(exclude_none=True)]
for call in calls:
    check("call id", bool(call.id), call)
    args = validate(call.function.name, call.function.arguments)
    messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call.function.name, args)})
final = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, tool_choice="none",
                                       temperature=0, max_tokens=40)
check("final answer", final.choices[0].message.content is not None and final.choices[0].message.tool_calls is None,
      final.choices[0].message)
check("final finish", final.choices[0].finish_reason in ("stop", "length"), final.choices[0].finish_reason)

# --- The same loop streamed: tool_calls deltas gathered by index. ---
gathered, finish = {}, None
for chunk in client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS, tool_choice="required",
                                            temperature=0, max_tokens=1000, stream=True):
    for c in chunk.choices:
        for delta in c.delta.tool_calls or []:
            entry = gathered.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] = delta.id or entry["id"]
            entry["name"] += delta.function.name or ""
            entry["arguments"] += delta.function.arguments or ""
        if c.finish_reason:
            finish = c.finish_reason
check("streamed finish tool_calls", finish == "tool_calls", finish)
check("streamed calls equal the whole answer's", [(g["name"], json.loads(g["arguments"])) for _, g in sorted(gathered.items())]
      == [(c.function.name, json.loads(c.function.arguments)) for c in calls], gathered)

# --- A named tool only, and a single call without parallel calls. ---
named = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS, parallel_tool_calls=False,
                                       tool_choice={"type": "function", "function": {"name": "get_time"}},
                                       temperature=0, max_tokens=400)
named_calls = named.choices[0].message.tool_calls or []
check("named tool", len(named_calls) == 1 and named_calls[0].function.name == "get_time", named.choices[0].message)


# --- RUNS sampled requests at temperature 1.0, four at a time: every call validates. ---
def sampled(seed):
    response = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS, tool_choice="required",
                                              parallel_tool_calls=seed % 2 == 0, temperature=1.0, seed=seed, max_tokens=1000)
    message = response.choices[0].message
    check("sampled finish", response.choices[0].finish_reason == "tool_calls", (seed, response.choices[0].finish_reason, message))
    for call in message.tool_calls:
        validate(call.function.name, call.function.arguments)
    return len(message.tool_calls)


with concurrent.futures.ThreadPoolExecutor(4) as pool:
    counts = list(pool.map(sampled, range(1, runs + 1)))
check("sampled calls", sum(counts) >= runs, counts)

# --- response_format json_schema (strict): the answer validates. ---
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                           "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3}},
          "required": ["name", "age", "hobbies"], "additionalProperties": False}
for seed in range(1, 6):
    answer = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Describe a person as JSON."}], temperature=1.0, seed=seed, max_tokens=200,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    text = answer.choices[0].message.content
    check("json_schema finish", answer.choices[0].finish_reason == "stop", answer.choices[0])
    jsonschema.validate(json.loads(text), PERSON)
bad = None
try:
    client.chat.completions.create(model=model, messages=QUESTION, max_tokens=5, response_format={
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "patternProperties": {"a": {}}}}})
except openai.BadRequestError as error:
    bad = str(error)
check("unsupported keyword refused by name", bad is not None and "patternProperties" in bad, bad)

# --- ollama: tools and a format schema. ---
oc = ollama.Client(host=base, timeout=TIMEOUT)
reply = oc.chat(model=model, messages=QUESTION, tools=TOOLS, options={"temperature": 0, "num_predict": 1000})
# Ollama has no tool_choice: a model may answer or call; when it calls, the calls validate against
# the schemas the client sent, which its Tool model cuts down to type, enum, items and required
# (no string lengths).
SENT = {tool.function.name: tool.function.parameters.model_dump(exclude_none=True, by_alias=True)
        for tool in (ollama.Tool.model_validate(t) for t in TOOLS)}
for call in reply.message.tool_calls or []:
    validate(call.function.name, call.function.arguments, SENT)
formatted = oc.chat(model=model, messages=[{"role": "user", "content": "Describe a person as JSON."}], format=PERSON,
                    options={"temperature": 1.0, "seed": 3, "num_predict": 200})
jsonschema.validate(json.loads(formatted.message.content), PERSON)
check("ollama format schema", True)

print(json.dumps({"passed": checks, "runs": runs, "calls": sum(counts)}))
