import Foundation
import HearthFormats

/// Test models that reason in `<think>…</think>`: a real model's weights and tokenizer under a
/// chat template of a reasoning model.
public enum ReasoningModels {
    /// ChatML whose generation prompt opens `<think>` as QwQ's and DeepSeek R1's do (closed at
    /// once when `enable_thinking` is false), and whose earlier answers show their
    /// `reasoning_content` in a `<think>` block, so a conversation can show SmolLM2 how to think.
    public static let chatMLTemplate = """
        {%- for message in messages -%}
        {{- '<|im_start|>' + message['role'] + '\\n' -}}
        {%- if message['role'] == 'assistant' and message['reasoning_content'] is defined and message['reasoning_content'] -%}
        {{- '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' -}}
        {%- endif -%}
        {{- message['content'] + '<|im_end|>\\n' -}}
        {%- endfor -%}
        {%- if add_generation_prompt -%}
        {{- '<|im_start|>assistant\\n<think>\\n' -}}
        {%- if not enable_thinking -%}{{- '</think>\\n\\n' -}}{%- endif -%}
        {%- endif -%}
        """

    /// A copy of the GGUF file at `source` with `template` as its chat template, written to
    /// `destination`; every other key and every tensor is the same.
    public static func write(_ source: URL, template: String, to destination: URL) throws {
        let file = try GGUFFile(contentsOf: source)
        var writer = GGUFWriter()
        for key in file.metadataKeys where key != "tokenizer.chat_template" && key != "general.alignment" {
            writer.add(key, file.metadata[key]!, elementKind: file.arrayElementKind(key))
        }
        writer.add("tokenizer.chat_template", .string(template))
        for tensor in file.tensors {
            writer.addTensor(name: tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: file.data(for: tensor))
        }
        try writer.write(to: destination)
    }

    /// SmolLM2-135M-Instruct under `chatMLTemplate`, written into `directory`.
    public static func smolLM2(in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("SmolLM2-thinking.gguf")
        try write(try TestFiles.modelURL(TestFiles.smolLM2), template: chatMLTemplate, to: url)
        return url
    }

    /// The tiny random Qwen3 model `qwen3-a` under the chat template `template` of
    /// models/templates (from scripts/fetch-models), written into `directory`.
    public static func tinyQwen3(template: String, in directory: URL) throws -> URL {
        try tiny("qwen3-a", template: template, in: directory)
    }

    /// The tiny random model `name` of the catalog under the chat template `template` of
    /// models/templates, written into `directory`.
    public static func tiny(_ name: String, template: String, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("\(name)-\(template).gguf")
        guard let tiny = TinyModel.catalog.first(where: { $0.name == name }) else {
            throw TestFiles.Missing(description: "The tiny model catalog has no \(name).")
        }
        let weights = URL(fileURLWithPath: try tiny.write(in: directory))
        let source = try String(contentsOf: TestFiles.modelURL("templates/\(template).jinja"), encoding: .utf8)
        try write(weights, template: source, to: url)
        return url
    }
}
