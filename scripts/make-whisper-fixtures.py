#!/usr/bin/env python3
"""Writes faster-whisper's outputs on the test speech as fixtures for Hearth's Whisper tests.

For every pocketsphinx librivox and cards clip (Debian's pocketsphinx-testdata) it records, with
the whisper-base model folder that scripts/fetch-models makes:
  - greedy decoding (beam 1, temperature 0, no fallback): text, segments with times, tokens,
    average log-probability and no-speech probability;
  - the defaults (beam 5, temperature fallback): text and segments;
  - word timestamps, greedy and with the defaults: segments with their words;
  - the language probabilities of the first window;
and for one clip the log-mel spectrogram faster-whisper feeds the encoder (80 x frames,
float32 little-endian, the frames of the audio itself, before the 30-second padding).

Usage: pip install faster-whisper; scripts/make-whisper-fixtures.py [MODEL_DIR] [OUT_DIR]
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.feature_extractor import FeatureExtractor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "whisper-base")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "Tests", "Fixtures", "whisper")
DATA = "/usr/share/pocketsphinx/test/data"
MEL_CLIP = "librivox/sense_and_sensibility_01_austen_64kb-0880.wav"
# Generated speech in other languages: espeak-ng voice and text. The tests make the same WAV
# with the same commands (espeak_wav below).
SPOKEN = [
    ("de", "Guten Morgen. Heute scheint die Sonne, und wir gehen zusammen in den Park."),
    ("fr", "Bonjour à tous. Aujourd'hui il fait beau, et nous allons nous promener au parc."),
    ("es", "Buenos días. Hoy hace sol, y vamos a caminar juntos por el parque."),
]


def espeak_wav(voice, text, path):
    """espeak-ng's speech as 16 kHz mono 16-bit PCM (sox resamples it, without its random dither)."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw.wav")
        subprocess.run(["espeak-ng", "-v", voice, "-w", raw, text], check=True)
        subprocess.run(["sox", "-D", raw, "-r", "16000", "-c", "1", "-b", "16", path], check=True)


def read_wav(path):
    """16-bit PCM mono WAV as floats in [-1, 1), as faster-whisper's decoder gives them."""
    with wave.open(path) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1 and w.getframerate() == 16000, path
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


def segments(result):
    out = []
    for s in result:
        segment = {
            "seek": s.seek,
            "start": s.start,
            "end": s.end,
            "text": s.text,
            "tokens": s.tokens,
            "temperature": s.temperature,
            "avg_logprob": s.avg_logprob,
            "no_speech_prob": s.no_speech_prob,
            "compression_ratio": s.compression_ratio,
        }
        if s.words is not None:
            segment["words"] = [
                {"start": w.start, "end": w.end, "word": w.word, "probability": w.probability} for w in s.words
            ]
        out.append(segment)
    return out


def main():
    model = WhisperModel(MODEL, device="cpu", compute_type="float32", cpu_threads=2)
    os.makedirs(OUT, exist_ok=True)
    clips = sorted(glob.glob(os.path.join(DATA, "librivox", "*.wav"))) + sorted(
        glob.glob(os.path.join(DATA, "cards", "*.wav"))
    )
    records = []
    for path in clips:
        audio = read_wav(path)
        greedy, info = model.transcribe(
            audio, beam_size=1, temperature=0.0, condition_on_previous_text=True, vad_filter=False
        )
        greedy = segments(greedy)
        default, _ = model.transcribe(audio)
        default = segments(default)
        greedy_words, _ = model.transcribe(
            audio, beam_size=1, temperature=0.0, word_timestamps=True, vad_filter=False
        )
        greedy_words = segments(greedy_words)
        default_words, _ = model.transcribe(audio, word_timestamps=True)
        default_words = segments(default_words)
        language, probability, all_probabilities = model.detect_language(audio)
        records.append(
            {
                "clip": os.path.relpath(path, DATA),
                "samples": len(audio),
                "language": info.language,
                "language_probability": info.language_probability,
                "language_probabilities": {k: v for k, v in all_probabilities[:10]},
                "greedy": {"text": "".join(s["text"] for s in greedy), "segments": greedy},
                "default": {"text": "".join(s["text"] for s in default), "segments": default},
                "greedy_words": {"text": "".join(s["text"] for s in greedy_words), "segments": greedy_words},
                "default_words": {"text": "".join(s["text"] for s in default_words), "segments": default_words},
            }
        )
        print(os.path.basename(path), repr(records[-1]["greedy"]["text"]), file=sys.stderr)
    spoken = []
    with tempfile.TemporaryDirectory() as tmp:
        for voice, text in SPOKEN:
            path = os.path.join(tmp, voice + ".wav")
            espeak_wav(voice, text, path)
            audio = read_wav(path)
            language, probability, _ = model.detect_language(audio)
            translated, _ = model.transcribe(audio, beam_size=1, temperature=0.0, task="translate", vad_filter=False)
            spoken.append({"voice": voice, "text": text, "samples": len(audio), "language": language,
                           "language_probability": probability,
                           "translation": "".join(s.text for s in translated)})
            print(voice, language, probability, repr(spoken[-1]["translation"]), file=sys.stderr)
    with open(os.path.join(OUT, "faster-whisper.json"), "w") as f:
        json.dump({"model": "whisper-base (CTranslate2, float32)", "clips": records, "spoken": spoken}, f, indent=1)
        f.write("\n")

    audio = read_wav(os.path.join(DATA, MEL_CLIP))
    mel = FeatureExtractor(feature_size=80)(audio)
    frames = len(audio) // 160
    mel = np.ascontiguousarray(mel[:, :frames], dtype="<f4")
    mel.tofile(os.path.join(OUT, "mel-0880.f32"))
    with open(os.path.join(OUT, "mel-0880.json"), "w") as f:
        json.dump({"clip": MEL_CLIP, "mels": 80, "frames": frames, "layout": "mel-major float32"}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
