import Foundation
import HearthTestSupport
import Testing

/// `hearth inspect` and `hearth show` on each family Hearth runs, under the chat template its
/// real models ship (from llama.cpp's models/templates): the family, what the model can do
/// and where its template and sampling come from.
@Suite("inspect and show name the family, capabilities and template source")
struct InspectFamiliesTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let tiny: String
        let template: String?
        let family: String
        let capabilities: [String]
        let sampling: String?
        var testDescription: String { "\(tiny) under \(template ?? "its own template")" }
    }

    static let cases: [Case] = [
        Case(tiny: "qwen2-a", template: "Qwen-Qwen2.5-7B-Instruct", family: "Qwen2 (Qwen2.5, DeepSeek-R1-Distill-Qwen)",
             capabilities: ["completion", "chat", "tools"], sampling: "temperature 0.7, top-k 20, top-p 0.8, min-p 0, repetition penalty 1.05"),
        Case(tiny: "qwen2-b", template: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", family: "Qwen2 (Qwen2.5, DeepSeek-R1-Distill-Qwen)",
             capabilities: ["completion", "chat", "thinking"], sampling: "temperature 0.7"),
        Case(tiny: "qwen3-a", template: "Qwen-Qwen3-0.6B", family: "Qwen3",
             capabilities: ["completion", "chat", "tools", "thinking"], sampling: "temperature 0.6, top-k 20, top-p 0.95, min-p 0"),
        Case(tiny: "qwen3moe-a", template: "Qwen-Qwen3-0.6B", family: "Qwen3 mixture of experts",
             capabilities: ["completion", "chat", "tools", "thinking"], sampling: "temperature 0.6"),
        Case(tiny: "phi3-a", template: "microsoft-Phi-3.5-mini-instruct", family: "Phi-3 (Phi-3.5, Phi-4-mini)",
             capabilities: ["completion", "chat"], sampling: nil),
        Case(tiny: "gemma2-a", template: "google-gemma-2-2b-it", family: "Gemma 2",
             capabilities: ["completion", "chat"], sampling: nil),
        Case(tiny: "llama3-a", template: "meta-llama-Llama-3.1-8B-Instruct", family: "Llama (Llama 2 and 3, SmolLM, Mistral)",
             capabilities: ["completion", "chat", "tools"], sampling: nil),
        // llama.cpp's copy of SmolLM3's template (Unsloth's edit) takes no tools.
        Case(tiny: "smollm3-a", template: "HuggingFaceTB-SmolLM3-3B", family: "SmolLM3",
             capabilities: ["completion", "chat", "thinking"], sampling: nil),
        Case(tiny: "lfm2-a", template: "LFM2.5-Instruct", family: "LFM2 (LFM2, LFM2.5)",
             capabilities: ["completion", "chat", "tools"], sampling: nil),
        Case(tiny: "qwen35-a", template: "Qwen3.5-4B", family: "Qwen3.5",
             capabilities: ["completion", "chat", "tools", "thinking"], sampling: nil),
        Case(tiny: "gptoss-a", template: "openai-gpt-oss-120b", family: "gpt-oss",
             capabilities: ["completion", "chat", "tools", "thinking"], sampling: nil),
        Case(tiny: "granitehybrid-a", template: "ibm-granite-granite-4.0", family: "Granite 4 (Granite 4.0-H)",
             capabilities: ["completion", "chat", "tools"], sampling: nil),
        Case(tiny: "granite-a", template: "ibm-granite-granite-4.0", family: "Granite (Granite 3.x, Granite 4.0 dense)",
             capabilities: ["completion", "chat", "tools"], sampling: nil),
        Case(tiny: "gemma4-a", template: "google-gemma-4-31B-it", family: "Gemma 4",
             capabilities: ["completion", "chat", "tools", "thinking"], sampling: nil),
        Case(tiny: "llama-spm-a", template: "mistralai-Mistral-Nemo-Instruct-2407", family: "Llama (Llama 2 and 3, SmolLM, Mistral)",
             capabilities: ["completion", "chat", "tools"], sampling: nil),
    ]

    private static func hearth(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        let directory = try TemporaryDirectory()
        let child = try Child(try TestFiles.hearthBinary, arguments,
                              environment: ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1"]) { _, new in new },
                              directory: directory)
        let status = try await child.wait()
        return (status, child.outputText, child.errorText)
    }

    @Test("each family", arguments: cases)
    func family(_ c: Case) async throws {
        let directory = try TemporaryDirectory()
        let spec = try #require(TinyModel.catalog.first { $0.name == c.tiny })
        var model = URL(fileURLWithPath: try spec.write(in: directory.url))
        if let template = c.template {
            let source = try String(contentsOf: TestFiles.modelURL("templates/\(template).jinja"), encoding: .utf8)
            let templated = directory.file("\(c.tiny)-templated.gguf")
            try ReasoningModels.write(model, template: source, to: templated)
            model = templated
        }

        let inspect = try await Self.hearth(["inspect", model.path, "--json"])
        #expect(inspect.status == 0, "\(inspect.errors)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(inspect.output.utf8)) as? [String: Any])
        #expect(summary["runs"] as? String == "yes")
        #expect(summary["family"] as? String == c.family)
        #expect(summary["capabilities"] as? [String] == c.capabilities)
        #expect(summary["templateSource"] as? String == "the file's own (tokenizer.chat_template)")
        if let sampling = c.sampling {
            #expect((summary["recommendedSampling"] as? String)?.hasPrefix(sampling) == true, "\(summary["recommendedSampling"] ?? "none")")
        } else {
            #expect(summary["recommendedSampling"] == nil)
        }
        let text = try await Self.hearth(["inspect", model.path])
        #expect(text.output.contains("family:") && text.output.contains(c.family))
        #expect(text.output.contains("capabilities:") && text.output.contains(c.capabilities.joined(separator: ", ")))

        let show = try await Self.hearth(["show", model.path, "--json"])
        #expect(show.status == 0, "\(show.errors)")
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(show.output.utf8)) as? [String: Any])
        #expect(shown["family"] as? String == c.family)
        #expect(shown["capabilities"] as? [String] == c.capabilities.sorted())
        #expect(shown["template_source"] as? String == "the file's own (tokenizer.chat_template)")
    }

    @Test("Gemma 3 without a template in its file names Hearth's known one and its recommended sampling")
    func gemmaKnownTemplate() async throws {
        let inspect = try await Self.hearth(["inspect", TestFiles.model(TestFiles.gemma3), "--json"])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(inspect.output.utf8)) as? [String: Any])
        #expect(summary["family"] as? String == "Gemma 3")
        #expect(summary["capabilities"] as? [String] == ["completion", "chat"])
        #expect((summary["templateSource"] as? String)?.hasPrefix("Hearth's known Gemma 3 template") == true)
        #expect(summary["recommendedSampling"] as? String == "temperature 1, top-k 64, top-p 0.95, min-p 0 (Gemma 3's published defaults)")
    }
}
