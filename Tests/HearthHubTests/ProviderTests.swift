import Crypto
import Foundation
import Hearth
import HearthHub
import HearthTestSupport
import HubEmulator
import Testing

@Suite("Model providers and the SDK")
struct ProviderTests {
    @Test("a plain URL with its sha256 is pulled, checked and kept beside the cache")
    func plainURL() async throws {
        let data = testBytes(500_000, seed: 41)
        let repo = HubEmulator.Repo("test-org/url-model", files: [.init("weights.gguf", data)])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let sha = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        let url = "\(hub.emulator.endpoint.absoluteString)/test-org/url-model/resolve/main/weights.gguf"
        let provider = URLModelProvider(cache: hub.cache, client: hub.client(), options: DownloadOptions(retry: HubFixture.fastRetry))

        let reference = try ModelReference.parse("\(url)#sha256=\(sha)")
        #expect(provider.handles(reference))
        #expect(try provider.cachedFiles(for: reference) == nil)
        let files = try await provider.pull(reference) { _ in }
        #expect(files.first?.path == hub.directory.url.appendingPathComponent("hearth/files/\(sha)/weights.gguf").path)
        #expect(try Data(contentsOf: files[0]) == data)
        #expect(try provider.cachedFiles(for: reference) == files)

        let wrong = try ModelReference.parse("\(url)#sha256=\(String(repeating: "0", count: 64))")
        await #expect {
            _ = try await provider.pull(wrong) { _ in }
        } throws: { error in
            if case .checksumMismatch = error as? HearthError { return true }
            return false
        }
        await #expect(throws: HearthError.self) { _ = try await provider.pull(.url(URL(string: url)!, sha256: nil)) { _ in } }
    }

    @Test("a whisper.cpp repository: NAME:base pulls ggml-base.bin alone, which transcribes, also offline; no name or a missing one is refused with the choices")
    func whisperCppRepository() async throws {
        let repo = HubEmulator.Repo("ggerganov/whisper.cpp", files: [
            .init("ggml-base.bin", contentsOf: try WhisperLayouts.ggml),
            .init("ggml-tiny.bin", testBytes(4096, seed: 5)),
            .init("ggml-base-q8_0.bin", testBytes(2048, seed: 6)),
            .init("README.md", Data("# whisper.cpp models\n".utf8)),
        ])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let clip = try SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0880.wav")
        let hearth = Hearth(configuration: .init(hub: hub.environment()))
        let speech = try await hearth.loadTranscriber("ggerganov/whisper.cpp:base")
        #expect(try await speech.transcribe(audioURL: clip, config: .greedy).text.contains("He was not an ill-disposed young man."))
        #expect(hub.emulator.bytesServed("ggml-tiny.bin") == 0 && hub.emulator.bytesServed("ggml-base-q8_0.bin") == 0
                && hub.emulator.bytesServed("README.md") == 0)

        let offline = Hearth(configuration: .init(hub: hub.environment(offline: true)))
        _ = try await offline.loadTranscriber("ggerganov/whisper.cpp:base")

        func refusal(_ name: String) async -> String {
            do {
                _ = try await hearth.pull(name) { _ in }
                return "pulled"
            } catch {
                return (error as? HearthError)?.message ?? "\(error)"
            }
        }
        #expect(await refusal("ggerganov/whisper.cpp").contains("holds 3 whisper.cpp models (base, base-q8_0, tiny): name one after a colon, such as :base for ggml-base.bin"))
        #expect(await refusal("ggerganov/whisper.cpp:large").contains("No ggml-large.bin in the repository; it has base, base-q8_0, tiny."))
    }

    @Test("Hearth.pull streams progress and picks the quantization; loadModel finds it offline")
    func sdkPull() async throws {
        let repo = HubEmulator.Repo("test-org/tiny-llama-GGUF", files: [
            .init("tiny-llama-Q8_0.gguf", testBytes(1000, seed: 1)),
            .init("tiny-llama-F32.gguf", try tinyLlamaGGUF()),
        ], tags: ["gguf"])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let hearth = Hearth(configuration: .init(hub: hub.environment()))
        #expect(try hearth.cachedModelFile("test-org/tiny-llama-GGUF:F32") == nil)
        var phases: [DownloadPhase] = []
        for try await progress in hearth.pull("test-org/tiny-llama-GGUF:F32") { phases.append(progress.phase) }
        #expect(phases.first == .resolving && phases.last == .done)
        #expect(hub.emulator.bytesServed("tiny-llama-Q8_0.gguf") == 0)

        let offline = Hearth(configuration: .init(hub: hub.environment(offline: true)))
        #expect(try offline.cachedModelFile("test-org/tiny-llama-GGUF:F32")?.lastPathComponent == "tiny-llama-F32.gguf")
        _ = try await offline.loadModel("test-org/tiny-llama-GGUF:F32")
        await #expect(throws: HearthError.offlineNotCached(name: "test-org/tiny-llama-GGUF:Q8_0")) {
            _ = try await offline.loadModel("test-org/tiny-llama-GGUF:Q8_0")
        }
        await #expect(throws: HearthError.modelNotFound(name: "test-org/tiny-llama-GGUF:Q8_0")) {
            _ = try await hearth.loadModel("test-org/tiny-llama-GGUF:Q8_0", pullIfMissing: false)
        }
    }

    @Test("hearth run on a name that is not cached pulls it with --yes and refuses without")
    func runPullsFirst() async throws {
        let model = try TestFiles.modelURL(TestFiles.smolLM2)
        let repo = HubEmulator.Repo("test-org/SmolLM2-GGUF", files: [.init("SmolLM2-135M-Instruct.Q4_1.gguf", contentsOf: model)], tags: ["gguf"])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let environment = childEnvironment(hub)
        let refused = try Child(TestFiles.hearthBinary, ["run", "test-org/SmolLM2-GGUF", "What is 2+2?"], environment: environment, directory: hub.directory)
        #expect(try await refused.wait() == 1)
        #expect(refused.errorText.contains("hearth pull test-org/SmolLM2-GGUF"))
        #expect(hub.emulator.bytesServed("SmolLM2-135M-Instruct.Q4_1.gguf") == 0)

        let run = try Child(TestFiles.hearthBinary, ["run", "test-org/SmolLM2-GGUF", "What is 2+2?", "-n", "40", "--temp", "0", "--yes"],
                            environment: environment, directory: hub.directory)
        #expect(try await run.wait() == 0, "\(run.errorText)")
        #expect(run.outputText.trimmingCharacters(in: .whitespacesAndNewlines) == "The answer to this classic math problem is 4.")
        #expect(run.errorText.contains("pulled test-org/SmolLM2-GGUF"))
        let list = try Child(TestFiles.hearthBinary, ["ls"], environment: environment, directory: hub.directory)
        _ = try await list.wait()
        #expect(list.outputText.contains("Q4_1"))
        #expect(list.outputText.contains("just now"))
    }
}

@Suite("Embedding models from the Hub")
struct EmbedderPullTests {
    @Test("hearth embed all-minilm pulls the sentence-transformers files it needs, and no other format")
    func embedAlias() async throws {
        let folder = try TestFiles.modelURL("all-MiniLM-L6-v2")
        let names = ["config.json", "config_sentence_transformers.json", "model.safetensors", "modules.json", "sentence_bert_config.json",
                     "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json"]
        var files = try names.map { name -> HubEmulator.File in
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            return HubEmulator.File(name, data, lfs: name.hasSuffix(".safetensors"))
        }
        files.append(.init("onnx/model.onnx", testBytes(300_000, seed: 61)))
        let repo = HubEmulator.Repo("sentence-transformers/all-MiniLM-L6-v2", files: files, pipelineTag: "sentence-similarity")
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let embed = try Child(TestFiles.hearthBinary, ["embed", "all-minilm", "a cat sat on the mat", "--yes"], environment: childEnvironment(hub),
                              directory: hub.directory)
        #expect(try await embed.wait() == 0, "\(embed.errorText)")
        let vector = try JSONSerialization.jsonObject(with: Data(embed.outputText.utf8)) as? [Double]
        #expect(vector?.count == 384)
        #expect(hub.emulator.bytesServed("onnx/model.onnx") == 0)
        #expect(hub.emulator.bytesServed("model.safetensors") > 0)

        // Loaded again from the cache, offline.
        let offline = Hearth(configuration: .init(hub: hub.environment(offline: true)))
        let embedder = try await offline.loadEmbedder("all-minilm")
        #expect(embedder.dimensions == 384)
        await #expect(throws: HearthError.self) { _ = try await offline.loadModel("all-minilm") }
    }
}
