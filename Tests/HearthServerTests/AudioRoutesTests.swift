import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// The clips these tests send (Debian's pocketsphinx-testdata, installed by .ci/run).
extension SpeechClips {
    /// "And Mr. John Dashwood had then leisure to consider how much there might be prudently
    /// in his power to do for them." (7.1 s)
    static let dashwood = "librivox/sense_and_sensibility_01_austen_64kb-0870.wav"
    static let librivox = ["0870", "0880", "0890", "0920", "0930"].map { "librivox/sense_and_sensibility_01_austen_64kb-\($0).wav" }

    static func data(_ clip: String) throws -> Data { try Data(contentsOf: url(clip)) }
}

/// Whisper base loaded in the test process, to compare the server's answers with the SDK's.
let referenceSpeech = Result { try SpeechModel(path: TestFiles.modelURL("whisper-base").path, name: "whisper-base", threads: 2) }

/// The SDK's transcription of `clip` with `config`.
func sdkTranscription(_ clip: URL, _ config: TranscriptionConfig = TranscriptionConfig()) async throws -> Transcription {
    try await referenceSpeech.get().transcribe(audioURL: clip, config: config)
}

/// The error object of an OpenAI error body, checked for OpenAI's four fields.
func openAIError(_ answer: HTTPAnswer, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let error = try #require(try answer.json()["error"] as? [String: Any], "not an OpenAI error: \(answer.text)", sourceLocation: sourceLocation)
    #expect(error["message"] is String && error["type"] is String, sourceLocation: sourceLocation)
    #expect(error.keys.contains("param") && error.keys.contains("code"), "OpenAI's error has param and code, null or not", sourceLocation: sourceLocation)
    return error
}

@Suite("OpenAI audio routes: transcriptions and translations on real Whisper, over loopback HTTP", .serialized)
struct AudioRoutesTests {
    @Test("every response_format on a librivox clip gives the SDK's transcription, with the right content type")
    func responseFormats() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let audio = try Data(contentsOf: clip)
        let expected = try await sdkTranscription(clip)
        let text = expected.text.trimmingCharacters(in: .whitespaces)
        #expect(text.contains("Dashwood"), "the SDK's own text: \(text)")

        // The model field may be absent, OpenAI's name or the served one.
        let json = try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "clip.wav", [("model", "whisper-1")]))
        #expect(json.status == 200, "\(json.text)")
        #expect(json.headers.first(name: "content-type") == "application/json")
        let body = try json.json()
        #expect(body["text"] as? String == text)
        #expect((body["usage"] as? [String: Any])?["seconds"] as? Int == Int(expected.duration.rounded(.up)))
        #expect((body["usage"] as? [String: Any])?["type"] as? String == "duration")

        for (format, contentType, want) in [("text", "text/plain; charset=utf-8", expected.formatted(.text)),
                                            ("srt", "application/x-subrip; charset=utf-8", expected.formatted(.srt)),
                                            ("vtt", "text/vtt; charset=utf-8", expected.formatted(.vtt))] {
            let answer = try await server.post("/v1/audio/transcriptions",
                                               form: .audio(audio, filename: "clip.wav", [("model", "whisper-base"), ("response_format", format)]))
            #expect(answer.status == 200, "\(format): \(answer.text)")
            #expect(answer.headers.first(name: "content-type") == contentType)
            #expect(answer.text == want, "\(format)")
        }
        #expect(expected.formatted(.srt).contains(" --> "), "the SDK's SRT has cues to compare")

        let verbose = try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "clip.wav", [("response_format", "verbose_json")]))
        #expect(verbose.status == 200, "\(verbose.text)")
        let object = try verbose.json()
        #expect(object["task"] as? String == "transcribe")
        #expect(object["language"] as? String == "english")
        #expect(abs((object["duration"] as? Double ?? 0) - expected.duration) < 1e-9)
        #expect(object["text"] as? String == text)
        #expect(object["words"] == nil, "words only when asked for")
        let segments = try #require(object["segments"] as? [[String: Any]])
        #expect(segments.count == expected.segments.count)
        for (index, (got, want)) in zip(segments, expected.segments).enumerated() {
            #expect(got["id"] as? Int == index)
            #expect(got["seek"] as? Int == want.seek)
            #expect(got["text"] as? String == want.text)
            #expect(got["tokens"] as? [Int] == want.tokens)
            for (key, value) in [("start", want.start), ("end", want.end), ("temperature", want.temperature),
                                 ("avg_logprob", want.averageLogProbability), ("compression_ratio", want.compressionRatio),
                                 ("no_speech_prob", want.noSpeechProbability)] {
                #expect(abs((got[key] as? Double ?? .nan) - value) < 1e-9, "segment \(index) \(key): \(got[key] ?? "missing") vs \(value)")
            }
        }
        #expect(try server.leftoverUploads().isEmpty, "every upload is removed")
    }

    @Test("language, prompt and temperature reach the transcription as the SDK's settings")
    func settings() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let prompt = "Sense and Sensibility, by Jane Austen."
        // German on English speech: the language is taken as given, not detected.
        let expected = try await sdkTranscription(clip, TranscriptionConfig(language: "de", initialPrompt: prompt, temperature: 0.4))
        let answer = try await server.post("/v1/audio/transcriptions", form: .audio(
            try Data(contentsOf: clip), filename: "clip.wav",
            [("language", "de"), ("prompt", prompt), ("temperature", "0.4"), ("response_format", "verbose_json")]))
        #expect(answer.status == 200, "\(answer.text)")
        let object = try answer.json()
        #expect(object["language"] as? String == "german")
        #expect(object["text"] as? String == expected.text.trimmingCharacters(in: .whitespaces))
        #expect((object["segments"] as? [[String: Any]])?.map { $0["tokens"] as? [Int] ?? [] } == expected.segments.map(\.tokens))

        // A language may be named as well as coded.
        let named = try await server.post("/v1/audio/transcriptions", form: .audio(try Data(contentsOf: clip), filename: "clip.wav",
                                                                                     [("language", "English"), ("response_format", "verbose_json")]))
        #expect(named.status == 200, "\(named.text)")
        #expect(try named.json()["language"] as? String == "english")
    }

    /// Needs the SDK's word timestamps (TranscriptionSegment.words); until the transcriber
    /// fills them, the server answers 500 no_word_timestamps here rather than an empty list.
    @Test("word granularity: verbose_json lists the SDK's words with their times")
    func wordTimestamps() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let audio = try Data(contentsOf: clip)
        let expected = try await sdkTranscription(clip, TranscriptionConfig(wordTimestamps: true))
        let expectedWords = expected.segments.flatMap { $0.words ?? [] }

        let both = try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "clip.wav", [
            ("response_format", "verbose_json"), ("timestamp_granularities[]", "word"), ("timestamp_granularities[]", "segment")]))
        #expect(both.status == 200, "\(both.text)")
        let object = try both.json()
        #expect((object["segments"] as? [[String: Any]])?.count == expected.segments.count)
        let words = try #require(object["words"] as? [[String: Any]], "no words in \(both.text)")
        #expect(!words.isEmpty)
        #expect(words.map { $0["word"] as? String ?? "" } == expectedWords.map { $0.word.trimmingCharacters(in: .whitespaces) })
        for (got, want) in zip(words, expectedWords) {
            #expect(abs((got["start"] as? Double ?? .nan) - want.start) < 1e-9 && abs((got["end"] as? Double ?? .nan) - want.end) < 1e-9)
        }
        let letters = { (text: String) in text.lowercased().filter(\.isLetter) }
        #expect(letters(words.map { $0["word"] as? String ?? "" }.joined()) == letters(object["text"] as? String ?? ""))

        // Words alone: OpenAI leaves the segments out.
        let wordsOnly = try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "clip.wav", [
            ("response_format", "verbose_json"), ("timestamp_granularities[]", "word")]))
        #expect(wordsOnly.status == 200, "\(wordsOnly.text)")
        #expect(try wordsOnly.json()["segments"] == nil)
        #expect((try wordsOnly.json()["words"] as? [[String: Any]])?.count == expectedWords.count)
    }

    @Test("translations: espeak-ng German becomes the SDK's English text")
    func translations() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let wav = server.directory.file("german.wav")
        try Tools.speech("Guten Morgen. Heute scheint die Sonne, und wir gehen zusammen in den Park.", options: ["-v", "de"], to: wav)
        let expected = try await sdkTranscription(wav, TranscriptionConfig(translate: true))
        #expect(expected.language == "de")
        let text = expected.text.trimmingCharacters(in: .whitespaces)

        let json = try await server.post("/v1/audio/translations", form: .audio(try Data(contentsOf: wav), filename: "german.wav", [("model", "whisper-1")]))
        #expect(json.status == 200, "\(json.text)")
        #expect(try json.json()["text"] as? String == text)

        let verbose = try await server.post("/v1/audio/translations", form: .audio(try Data(contentsOf: wav), filename: "german.wav",
                                                                                     [("response_format", "verbose_json")]))
        #expect(verbose.status == 200, "\(verbose.text)")
        let object = try verbose.json()
        #expect(object["task"] as? String == "translate")
        #expect(object["language"] as? String == "english", "a translation's language is its text's, as OpenAI answers")
        #expect(object["text"] as? String == text)

        // The same speech transcribed, not translated, stays German.
        let transcribed = try await server.post("/v1/audio/transcriptions", form: .audio(try Data(contentsOf: wav), filename: "german.wav",
                                                                                          [("response_format", "verbose_json")]))
        #expect(try transcribed.json()["language"] as? String == "german")
        #expect(try transcribed.json()["text"] as? String != text)
    }

    @Test("a file over 25 MiB gets 413 in OpenAI's error shape, with or without Content-Length; nothing is left behind")
    func tooLarge() async throws {
        // `hearth serve` with no limit of its own given: its default is the one checked.
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        // A real WAV header, so only the size is wrong.
        var big = try SpeechClips.data(SpeechClips.dashwood)
        big.append(Data(count: (25 << 20) + 1 - big.count))
        for chunked in [false, true] {
            let answer = try await server.post("/v1/audio/transcriptions", form: .audio(big, filename: "big.wav"), chunked: chunked)
            #expect(answer.status == 413, "chunked \(chunked): \(answer.text)")
            let error = try openAIError(answer)
            #expect(error["type"] as? String == "invalid_request_error")
            #expect(error["code"] as? String == "file_too_large")
            #expect(error["param"] as? String == "file")
            #expect((error["message"] as? String ?? "").contains("25 MiB"))
        }
        // Exactly the limit is accepted (and is not audio past its header's data: still a clean answer).
        var atLimit = try SpeechClips.data(SpeechClips.dashwood)
        atLimit.append(Data(count: (25 << 20) - atLimit.count))
        let accepted = try await server.post("/v1/audio/transcriptions", form: .audio(atLimit, filename: "limit.wav"))
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(try server.leftoverUploads().isEmpty)
    }

    @Test("bad requests get 400 or 404 with a message that says what to do, and the server keeps serving")
    func badRequests() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let audio = try SpeechClips.data(SpeechClips.dashwood)
        let route = "/v1/audio/transcriptions"

        func expectError(_ answer: HTTPAnswer, status: Int = 400, mentions words: [String], param: String? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(answer.status == status, "\(answer.text)", sourceLocation: sourceLocation)
            let error = try openAIError(answer, sourceLocation: sourceLocation)
            let message = error["message"] as? String ?? ""
            for word in words { #expect(message.contains(word), "'\(word)' not in: \(message)", sourceLocation: sourceLocation) }
            if let param { #expect(error["param"] as? String == param, sourceLocation: sourceLocation) }
        }

        try expectError(try await server.post(route, ["model": "whisper-1", "file": "clip.wav"]), mentions: ["multipart/form-data"])
        var noFile = MultipartForm()
        noFile.field("model", "whisper-1")
        try expectError(try await server.post(route, form: noFile), mentions: ["`file`"], param: "file")
        try expectError(try await server.post(route, form: .audio(Data(), filename: "silence.wav")), mentions: ["silence.wav", "empty"], param: "file")
        let notAudio = try await server.post(route, form: .audio(Data("These are my notes, not a recording.\n".utf8), filename: "notes.txt", []))
        try expectError(notAudio, mentions: ["notes.txt", "not audio"], param: "file")
        #expect(!notAudio.text.contains("hearth-audio-"), "the temporary file's name is no business of the client's")
        try expectError(try await server.post(route, form: .audio(audio.prefix(30), filename: "cut.wav")), mentions: ["cut.wav"], param: "file")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("response_format", "xml")])),
                        mentions: ["xml", "verbose_json"], param: "response_format")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("language", "klingon")])),
                        mentions: ["klingon", "ISO-639-1"], param: "language")
        for temperature in ["1.5", "-0.1", "warm", "nan"] {
            try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("temperature", temperature)])),
                            mentions: ["between 0 and 1"], param: "temperature")
        }
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("timestamp_granularities[]", "word")])),
                        mentions: ["verbose_json"], param: "timestamp_granularities")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav",
                                                                  [("response_format", "verbose_json"), ("timestamp_granularities[]", "sentence")])),
                        mentions: ["sentence"], param: "timestamp_granularities")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("stream", "true")])),
                        mentions: ["stream", "not supported"], param: "stream")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("include[]", "logprobs")])),
                        mentions: ["include"], param: "include")
        try expectError(try await server.post(route, form: .audio(audio, filename: "clip.wav", [("model", "whisper-large-v3")])), status: 404,
                        mentions: ["whisper-large-v3", "whisper-base", "whisper-1"], param: "model")
        var twoFiles = MultipartForm.audio(audio, filename: "a.wav")
        twoFiles.file(audio, filename: "b.wav")
        try expectError(try await server.post(route, form: twoFiles), mentions: ["one audio file"], param: "file")
        let form = MultipartForm.audio(audio, filename: "clip.wav", [("model", "whisper-1")])
        try expectError(try await server.client.post(route, bytes: form.truncatedBody, contentType: form.contentType),
                        mentions: ["ended before"], param: "file")
        try expectError(try await server.client.post(route, bytes: form.body, contentType: "multipart/form-data"), mentions: ["boundary"])
        try expectError(try await server.client.post(route, bytes: Data("--x\r\nContent-Type: text/plain\r\n\r\nhello\r\n--x--\r\n".utf8),
                                                     contentType: "multipart/form-data; boundary=x"), mentions: ["Content-Disposition"])
        try expectError(try await server.client.post(route, bytes: Data("--x\r\nnot a header line\r\n\r\n--x--\r\n".utf8),
                                                     contentType: "multipart/form-data; boundary=x"), mentions: ["malformed"])

        #expect(try server.leftoverUploads().isEmpty, "every upload is removed, whatever went wrong")
        let fine = try await server.post(route, form: form)
        #expect(fine.status == 200, "the server still transcribes: \(fine.text)")
    }

    @Test("a server without a speech model says how to start it with one, and lists none")
    func noSpeechModel() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let audio = try SpeechClips.data(SpeechClips.dashwood)
        for route in ["/v1/audio/transcriptions", "/v1/audio/translations"] {
            let answer = try await server.post(route, form: .audio(audio, filename: "clip.wav", [("model", "whisper-1")]))
            #expect(answer.status == 400)
            let error = try openAIError(answer)
            #expect(error["code"] as? String == "no_speech_model")
            #expect((error["message"] as? String ?? "").contains("--speech-model"))
        }
        let storage = try await server.get("/v1/storage").json()
        #expect(storage["speech_model"] is NSNull)
        let listed = (try await server.get("/v1/models").json()["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(!listed.contains("whisper-base") && listed.contains("smollm2"))
    }

    @Test("the speech model is listed by /v1/models and /v1/storage, and loads once for requests that arrive together")
    func listedAndSharedLoad() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let listed = (try await server.get("/v1/models").json()["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(listed.contains("whisper-base") && listed.contains("smollm2"))
        let one = try await server.get("/v1/models/whisper-base")
        #expect(one.status == 200)
        #expect(try one.json()["id"] as? String == "whisper-base")
        var storage = try await server.get("/v1/storage").json()
        #expect(storage["speech_model"] as? String == "whisper-base")
        var row = (storage["models"] as? [[String: Any]])?.first { $0["name"] as? String == "whisper-base" }
        #expect(row?["kind"] as? String == "speech" && row?["loaded"] as? Bool == false && (row?["size"] as? Int ?? 0) > 50_000_000)

        let audio = try SpeechClips.data(SpeechClips.librivox[1])
        let answers = try await withThrowingTaskGroup(of: HTTPAnswer.self) { group in
            for _ in 0..<3 { group.addTask { try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "clip.wav")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(Set(try answers.map { try $0.json()["text"] as? String ?? "" }).count == 1, "one model, one answer")
        storage = try await server.get("/v1/storage").json()
        row = (storage["models"] as? [[String: Any]])?.first { $0["name"] as? String == "whisper-base" }
        #expect(row?["loaded"] as? Bool == true)
        let metrics = try await server.get("/metrics").text
        #expect(try metric("hearth_transcriptions_total", in: metrics) == 3)
    }

    @Test("a chat request answers while a long transcription runs")
    func chatDuringTranscription() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        // Every librivox clip six times: 148 seconds of speech, five windows of Whisper's, each
        // of them far more work than loading SmolLM2 and answering in 8 tokens, on any machine
        // and however busy (both run in the one server, on the same cores).
        let long = server.directory.file("long.wav")
        let clips = try SpeechClips.librivox.map { try SpeechClips.url($0).path }
        #expect(try Tools.run("sox", Array(repeating: clips, count: 6).flatMap { $0 } + [long.path]) == 0)
        let audio = try Data(contentsOf: long)

        let finished = Flag()
        let transcription = Task {
            defer { finished.set() }
            return try await server.post("/v1/audio/transcriptions", form: .audio(audio, filename: "long.wav"))
        }
        // The chat is sent once the transcription has its audio and is running.
        try await waitUntil("the transcription to run", every: .milliseconds(100)) {
            try await Self.transcriptionsRunning(server) > 0 || finished.isSet
        }
        if finished.isSet {
            Issue.record("the transcription ended before it was seen running: \(try await transcription.value.text)")
            return
        }
        let chat = try await server.post("/v1/chat/completions",
                                         ["model": "smollm2", "max_tokens": 8, "temperature": 0, "messages": [["role": "user", "content": "Hi!"]]])
        let stillRunning = try await Self.transcriptionsRunning(server)
        #expect(chat.status == 200, "\(chat.text)")
        #expect(stillRunning == 1, "the chat should have answered while the transcription was still running")
        let done = try await transcription.value
        #expect(done.status == 200, "\(done.text)")
        #expect((try done.json()["text"] as? String ?? "").contains("Dashwood"))
    }

    @Test("hearth serve --speech-model takes a relative faster-whisper folder, named after it, and refuses what is not a Whisper model at start")
    func serveCommand() async throws {
        let directory = try TemporaryDirectory()
        _ = try TestFiles.modelURL("whisper-base")
        // As the README has it: from the package root, where models/ is.
        let child = try Self.serve(["--speech-model", "models/whisper-base"], in: directory, workingDirectory: TestFiles.packageRoot)
        defer { child.signal(SIGTERM) }
        let server = try await Self.listening(child)
        #expect(child.outputText.contains("(speech: whisper-base)\n"))
        let answer = try await server.post("/v1/audio/transcriptions", form: .audio(try SpeechClips.data(SpeechClips.librivox[1]),
                                                                                      filename: "clip.wav", [("model", "whisper-1")]))
        #expect(answer.status == 200, "\(answer.text)")
        // faster-whisper's text for the clip, with its default settings as the server's.
        let fixture = try JSONSerialization.jsonObject(with: Data(contentsOf: SpeechClips.fixture("faster-whisper.json")))
        let clips = try #require((fixture as? [String: Any])?["clips"] as? [[String: Any]])
        let expected = try #require((clips.first { $0["clip"] as? String == SpeechClips.librivox[1] }?["default"] as? [String: Any])?["text"] as? String)
        #expect(try answer.json()["text"] as? String == expected.trimmingCharacters(in: .whitespaces))

        for (argument, complaint) in [("models/no-such-whisper", "no such file or folder"), ("models/all-MiniLM-L6-v2", "holds no Whisper model"),
                                      ("models/SmolLM2-135M-Instruct.Q4_1.gguf", "not a whisper.cpp model file")] {
            let refused = try Self.serve(["--speech-model", argument], in: directory, workingDirectory: TestFiles.packageRoot)
            // A server that starts anyway would never exit: it is killed, and that is a failure.
            let status = try await refused.wait(atMost: .seconds(300))
            #expect(status != 0, "--speech-model \(argument) should be refused at start")
            #expect(refused.errorText.contains("--speech-model \(argument)") && refused.errorText.contains(complaint), "\(refused.errorText)")
        }
    }

    @Test("hearth serve --speech-model takes a whisper.cpp file, named after it without its extension")
    func serveCommandWithGGMLFile() async throws {
        let directory = try TemporaryDirectory()
        let file = try WhisperLayouts.ggml
        let child = try Self.serve(["--speech-model", file.path], in: directory)
        defer { child.signal(SIGTERM) }
        let server = try await Self.listening(child)
        #expect(child.outputText.contains("(speech: ggml-base)"))
        let answer = try await server.post("/v1/audio/transcriptions", form: .audio(try SpeechClips.data(SpeechClips.librivox[1]), filename: "clip.wav",
                                                                                      [("model", "ggml-base")]))
        #expect(answer.status == 200, "\(answer.text)")
        #expect((try answer.json()["text"] as? String ?? "").contains("young man"), "\(answer.text)")
        let storage = try await server.get("/v1/storage").json()
        let row = (storage["models"] as? [[String: Any]])?.first { $0["name"] as? String == "ggml-base" }
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
        #expect(row?["kind"] as? String == "speech" && row?["size"] as? Int == size && row?["loaded"] as? Bool == true)
    }

    @Test("hearth serve --speech-weights q8_0 transcribes as the SDK does with Q8_0 weights; another kind is refused at start")
    func serveCommandWithQ8_0Weights() async throws {
        let directory = try TemporaryDirectory()
        let file = try WhisperLayouts.ggmlQ8_0
        let child = try Self.serve(["--speech-model", file.path, "--speech-weights", "q8_0"], in: directory)
        defer { child.signal(SIGTERM) }
        let server = try await Self.listening(child)
        #expect(child.outputText.contains("(speech: ggml-base-q8_0, q8_0 weights)"), "\(child.outputText)")
        let clip = SpeechClips.librivox[1]
        let answer = try await server.post("/v1/audio/transcriptions", form: .audio(try SpeechClips.data(clip), filename: "clip.wav",
                                                                                      [("model", "whisper-1"), ("response_format", "verbose_json")]))
        #expect(answer.status == 200, "\(answer.text)")
        let sdk = try await SpeechModel(path: file.path, threads: 2, weights: .q8_0).transcribe(audioURL: try SpeechClips.url(clip))
        let segments = try answer.json()["segments"] as? [[String: Any]] ?? []
        #expect(segments.map { $0["tokens"] as? [Int] ?? [] } == sdk.segments.map(\.tokens))

        let refused = try Self.serve(["--speech-model", file.path, "--speech-weights", "int8"], in: directory)
        let status = try await refused.wait()
        #expect(status != 0 && refused.errorText.contains("--speech-weights must be one of float, q8_0"), "\(refused.errorText)")
    }

    /// `hearth serve` with no language model and `arguments`, offline, its files in `directory`,
    /// started (it may refuse them).
    static func serve(_ arguments: [String], in directory: TemporaryDirectory, workingDirectory: URL? = nil) throws -> Child {
        var command = try ServeCommand(directory: directory)
        (command.models, command.arguments, command.workingDirectory) = ([], arguments, workingDirectory)
        let child = try command.start()
        child.killWhenTestsEnd()
        return child
    }

    /// The server a `hearth serve` child listens as, once it says so.
    static func listening(_ child: Child) async throws -> RemoteServer {
        RemoteServer(base: try await child.listeningURL())
    }

    /// The server's count of audio requests in progress, from /metrics.
    static func transcriptionsRunning(_ server: some TestServer) async throws -> Int {
        let metrics = try await server.get("/metrics").text
        return Int(try metric("hearth_transcriptions_running", in: metrics))
    }
}

/// A flag one task sets and another reads.
private final class Flag: Sendable {
    private let value = Mutex(false)

    func set() { value.withLock { $0 = true } }

    var isSet: Bool { value.withLock { $0 } }
}
