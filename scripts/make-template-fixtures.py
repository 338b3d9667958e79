#!/usr/bin/env python3
"""Writes Tests/Fixtures/templates/expected/<template>/<conversation>.txt: every chat template rendered
for every conversation in conversations.json by Python jinja2 3.1.6. The templates are the ones under
"templates" (Tests/Fixtures/templates/<name>.jinja) and under "model_templates" (llama.cpp's collection,
models/templates/<name>.jinja, which scripts/fetch-models extracts from the llama-cpp-python source
package).

The environment is the one Hugging Face transformers' apply_chat_template builds
(utils/chat_template_utils.py), which model authors test their templates in:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension
and a pass-through {% generation %} tag, its own `tojson` filter (json.dumps, no HTML escaping,
ensure_ascii=False), and the globals `raise_exception` and `strftime_now`.

The variables are the ones llama.cpp's server passes (common/chat.cpp,
common_chat_template_direct_apply and common_chat_extra_context): messages, bos_token and eos_token
(empty when the model has none), add_generation_prompt, enable_thinking (true, the server's default,
unless the conversation sets it), tools only when the conversation has tools (otherwise undefined,
not None), and `date_string` ("%d %b %Y") and `datetime` ("%b %d %Y") of the current date; then the
template's entry in conversations.json (its special tokens, and `functions` for Firefunction v2,
which llama.cpp's Firefunction handler used to pass as the tools' JSON), then the conversation's
extra variables. Unlike llama.cpp, add_generation_prompt is passed as false rather than left out,
as transformers passes it.

`strftime_now` and the dates read the fixed time "now" from conversations.json so the output never
changes. A render that raises writes <conversation>.error instead: the exception's class and message.

It also renders the small templates of constructs.json, one per language feature, with their own
variables, into constructs-expected.json: {name: {"output": text} or {"error": "Class: message"}},
with "line" added when jinja2 names the line of a syntax error.

    pip install jinja2==3.1.6
    scripts/fetch-models
    scripts/make-template-fixtures.py
"""
import datetime
import json
import os
import shutil

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixtures = os.path.join(root, "Tests", "Fixtures", "templates")
model_templates = os.path.join(root, "models", "templates")
JINJA2_VERSION = "3.1.6"


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker as far as the output is concerned: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def context(tokens, conversation, now):
    """The variables llama.cpp's server passes for this conversation (see the module's doc)."""
    variables = {"bos_token": "", "eos_token": ""}
    variables.update(tokens)
    variables["messages"] = conversation["messages"]
    variables["add_generation_prompt"] = conversation["add_generation_prompt"]
    variables["enable_thinking"] = True
    variables["date_string"] = now.strftime("%d %b %Y")
    variables["datetime"] = now.strftime("%b %d %Y")
    if conversation.get("tools"):
        variables["tools"] = conversation["tools"]
    variables.update(conversation.get("extra", {}))
    return variables


def template_sources(doc):
    """(name, path, special tokens) of every template, the fixtures' own first."""
    for name, tokens in doc["templates"].items():
        yield name, os.path.join(fixtures, name + ".jinja"), tokens
    for name, tokens in doc["model_templates"].items():
        path = os.path.join(model_templates, name + ".jinja")
        if not os.path.exists(path):
            raise SystemExit(f"{path} is missing: run scripts/fetch-models first")
        yield name, path, tokens


def main():
    if jinja2.__version__ != JINJA2_VERSION:
        raise SystemExit(f"jinja2 {jinja2.__version__} is installed; the fixtures are made with {JINJA2_VERSION}")
    with open(os.path.join(fixtures, "conversations.json"), encoding="utf-8") as f:
        doc = json.load(f)
    now = datetime.datetime.fromisoformat(doc["now"])
    env = environment(now)
    expected = os.path.join(fixtures, "expected")
    shutil.rmtree(expected, ignore_errors=True)
    for name, source, tokens in template_sources(doc):
        with open(source, encoding="utf-8", newline="") as f:
            template = env.from_string(f.read())
        out_dir = os.path.join(expected, name)
        os.makedirs(out_dir)
        for conversation in doc["conversations"]:
            try:
                text = template.render(**context(tokens, conversation, now))
                path, content = conversation["name"] + ".txt", text
            except Exception as error:  # the expected outcome is the failure itself
                path, content = conversation["name"] + ".error", f"{type(error).__name__}: {error}\n"
            with open(os.path.join(out_dir, path), "w", encoding="utf-8", newline="") as f:
                f.write(content)
        print(f"{name}: {len(doc['conversations'])} conversations")

    with open(os.path.join(fixtures, "constructs.json"), encoding="utf-8") as f:
        constructs = json.load(f)
    results = {}
    for construct in constructs:
        try:
            results[construct["name"]] = {"output": env.from_string(construct["template"]).render(**construct["context"])}
        except Exception as error:  # the expected outcome is the failure itself
            results[construct["name"]] = {"error": f"{type(error).__name__}: {error}"}
            if isinstance(error, jinja2.TemplateSyntaxError):
                results[construct["name"]]["line"] = error.lineno
    with open(os.path.join(fixtures, "constructs-expected.json"), "w", encoding="utf-8", newline="") as f:
        json.dump(results, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"constructs-expected.json: {len(results)} templates")


if __name__ == "__main__":
    main()
