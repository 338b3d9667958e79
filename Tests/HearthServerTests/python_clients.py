"""Drives a running hearth serve with the real `openai` and `ollama` Python clients.

Usage: python_clients.py BASE_URL EXPECTED_JSON
EXPECTED_JSON holds the engine's own answers, computed by the Swift test that runs this; its keys
choose the checks: "question" the chat, completion and embedding ones (openai and ollama),
"audio" the openai speech to text ones, "audio_words" word timestamps.
Exits non-zero with the failed check's message.
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


client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=TIMEOUT)


def openai_checks():
    question = expected["question"]
    ids = [m.id for m in client.models.list()]
    check("openai models.list", "smollm2" in ids and "all-minilm" in ids, ids)

    messages = [{"role": "user", "content": question}]
    chat = client.chat.completions.create(model="smollm2", messages=messages, temperature=0, max_tokens=24)
    check("openai chat content", chat.choices[0].message.content == expected["chat"], repr(chat.choices[0].message.content))
    check("openai chat usage", chat.usage.completion_tokens > 0 and chat.usage.total_tokens > chat.usage.prompt_tokens, chat.usage)
    check("openai chat finish", chat.choices[0].finish_reason in ("stop", "length"), chat.choices[0].finish_reason)

    parts, usage, finish = [], None, None
    for chunk in client.chat.completions.create(model="smollm2", messages=messages, temperature=0, max_tokens=24, stream=True,
                                                stream_options={"include_usage": True}):
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
            if choice.finish_reason:
                finish = choice.finish_reason
    check("openai streamed chat content", "".join(parts) == expected["chat"], repr("".join(parts)))
    check("openai streamed chat finish and usage", finish in ("stop", "length") and usage and usage.completion_tokens > 0, (finish, usage))

    completion = client.completions.create(model="smollm2", prompt=expected["completion_prompt"], temperature=0, max_tokens=12)
    check("openai completion", completion.choices[0].text == expected["completion"], repr(completion.choices[0].text))

    embeddings = client.embeddings.create(model="all-minilm", input=["a cat", "a dog"])
    check("openai embeddings", [len(d.embedding) for d in embeddings.data] == [384, 384], len(embeddings.data))

    try:
        client.chat.completions.create(model="no-such-model", messages=messages)
        check("openai unknown model", False, "no error")
    except openai.NotFoundError as error:
        check("openai unknown model", "no-such-model" in str(error), str(error))

    if expected.get("json_mode"):
        answer = client.chat.completions.create(model="smollm2", temperature=0, max_tokens=200, response_format={"type": "json_object"},
                                                messages=[{"role": "user", "content": "Give me a JSON object with the name and age of a fictional person."}])
        check("openai json_object finish", answer.choices[0].finish_reason == "stop", answer.choices[0].finish_reason)
        parsed = json.loads(answer.choices[0].message.content)
        check("openai json_object", isinstance(parsed, dict), answer.choices[0].message.content)


def ollama_checks():
    question = expected["question"]
    messages = [{"role": "user", "content": question}]
    o = ollama.Client(host=base, timeout=TIMEOUT)
    names = [m.model for m in o.list().models]
    check("ollama list", "smollm2" in names, names)
    options = {"temperature": 0, "num_predict": 24}
    reply = o.chat(model="smollm2", messages=messages, options=options)
    check("ollama chat", reply.message.content == expected["chat"], repr(reply.message.content))
    check("ollama chat counts", reply.eval_count and reply.eval_count > 0 and reply.prompt_eval_count > 0, reply)
    streamed = "".join(part.message.content for part in o.chat(model="smollm2", messages=messages, options=options, stream=True))
    check("ollama streamed chat", streamed == expected["chat"], repr(streamed))
    generated = o.generate(model="smollm2", prompt=expected["completion_prompt"], raw=True, options={"temperature": 0, "num_predict": 12})
    check("ollama generate raw", generated.response == expected["completion"], repr(generated.response))
    vectors = o.embed(model="all-minilm", input=["one", "two"])
    check("ollama embed", [len(v) for v in vectors.embeddings] == [384, 384], len(vectors.embeddings))
    shown = o.show("smollm2")
    check("ollama show", shown.details.family == "llama", shown.details)

    if expected.get("pull"):
        statuses, completed = [], []
        for progress in o.pull(expected["pull"], stream=True):
            statuses.append(progress.status)
            if progress.completed:
                completed.append(progress.completed)
        check("ollama pull progress", statuses[0] == "pulling manifest" and statuses[-1] == "success" and completed, statuses)
        check("ollama pull listed", expected["pull"] in [m.model for m in o.list().models])
        o.delete(expected["pull"])
        check("ollama delete", expected["pull"] not in [m.model for m in o.list().models])

    running = [m.model for m in o.ps().models]
    check("ollama ps", "smollm2" in running, running)
    try:
        o.chat(model="no-such-model", messages=messages)
        check("ollama unknown model", False, "no error")
    except ollama.ResponseError as error:
        check("ollama unknown model", error.status_code == 404, error)


def same_times(got, want, *keys):
    """Whether two lists of timed items agree: `keys` exactly, start and end within a
    microsecond (the numbers pass through two JSON writers)."""
    return len(got) == len(want) and all(
        all(g[k] == w[k] for k in keys) and abs(g["start"] - w["start"]) < 1e-6 and abs(g["end"] - w["end"]) < 1e-6
        for g, w in zip(got, want))


def audio_checks():
    audio = expected["audio"]
    with open(audio["clip"], "rb") as f:
        result = client.audio.transcriptions.create(model="whisper-1", file=f)
    check("openai transcription json", result.text == audio["text"], repr(result.text))
    with open(audio["clip"], "rb") as f:
        srt = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="srt")
    check("openai transcription srt", srt == audio["srt"], repr(srt))
    with open(audio["clip"], "rb") as f:
        verbose = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                                     timestamp_granularities=["segment"])
    check("openai transcription verbose_json", verbose.language == "english" and verbose.text == audio["text"]
          and abs(verbose.duration - audio["duration"]) < 1e-6, (verbose.language, verbose.text, verbose.duration))
    segments = [{"text": s.text, "tokens": s.tokens, "start": s.start, "end": s.end} for s in verbose.segments or []]
    check("openai transcription segments", same_times(segments, audio["segments"], "text", "tokens"), segments)
    with open(audio["german"], "rb") as f:
        translation = client.audio.translations.create(model="whisper-1", file=f)
    check("openai translation", translation.text == audio["translation"], repr(translation.text))
    with open(audio["german"], "rb") as f:
        translation = client.audio.translations.create(model="whisper-1", file=f, response_format="verbose_json")
    check("openai translation verbose_json", translation.language == "english" and translation.text == audio["translation"],
          (translation.language, translation.text))
    try:
        client.audio.transcriptions.create(model="whisper-1", file=("notes.txt", b"These are notes, not audio.", "text/plain"))
        check("openai transcription of a text file", False, "no error")
    except openai.BadRequestError as error:
        check("openai transcription of a text file", "notes.txt" in str(error), str(error))
    try:
        client.audio.transcriptions.create(model="whisper-1", file=("big.wav", b"\0" * ((25 << 20) + 1), "audio/wav"))
        check("openai transcription over 25 MiB", False, "no error")
    except openai.APIStatusError as error:
        check("openai transcription over 25 MiB", error.status_code == 413 and "MiB" in str(error), str(error))


def word_checks():
    audio = expected["audio_words"]
    with open(audio["clip"], "rb") as f:
        verbose = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                                     timestamp_granularities=["word", "segment"])
    words = [{"word": w.word, "start": w.start, "end": w.end} for w in verbose.words or []]
    check("openai transcription words", words and same_times(words, audio["words"], "word"), words)
    check("openai transcription words with segments", verbose.segments and verbose.text == audio["text"], verbose)


if "question" in expected:
    openai_checks()
    ollama_checks()
if "audio" in expected:
    audio_checks()
if "audio_words" in expected:
    word_checks()
check("some checks ran", checks, expected.keys())
print(json.dumps({"passed": checks}))
