import Foundation
import Hearth
import Hummingbird

/// Ollama's model routes under /api: the models it has (tags), those loaded (ps), one
/// model's details (show), pulling from the Hub and deleting from the cache.
struct OllamaModelsController: Sendable {
    let service: HearthService

    func addRoutes(to api: some RouterMethods<BasicRequestContext>) {
        api.get("tags") { _, _ in try await tags() }
        api.post("show", use: show)
        api.post("pull", use: pull)
        api.get("ps") { _, _ in try await running() }
        api.delete("delete", use: delete)
    }

    private func tags() async throws -> Response {
        let entries = await service.models.catalog()
        return try JSONBody.response(["models": entries.map { ollamaModel($0) }])
    }

    private func running() async throws -> Response {
        let running = await service.models.running()
        let list = running.map { model, expiresAt in
            var entry = ollamaModel(ModelEntry(name: model.name, url: model.url, size: model.size, modified: model.loadedAt,
                                               isEmbedding: { if case .language = model.kind { false } else { true } }()))
            entry.modified_at = nil
            entry.expires_at = OllamaFormat.timestamp(expiresAt ?? Date.distantFuture)
            entry.size = model.memoryBytes
            entry.size_vram = 0
            return entry
        }
        return try JSONBody.response(["models": list])
    }

    private func show(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let name = try await service.models.canonicalName(try await request.decodeJSON(OllamaModelRequest.self, limit: service.bodyLimit).required())
        let url = try await service.models.locate(name)
        struct Body: Encodable {
            var modelfile: String
            var parameters: String
            var template: String
            var details: OllamaModel.Details
            var model_info: [String: JSONValue]
            var capabilities: [String]
            var modified_at: String
        }
        let modified = (try? FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date) ?? Date()
        if ModelManager.isDirectory(url) {
            return try JSONBody.response(Body(modelfile: "", parameters: "", template: "",
                                              details: .init(format: "safetensors", family: "bert", families: ["bert"], parameter_size: "",
                                                             quantization_level: "F32"),
                                              model_info: ["general.architecture": .string("bert")], capabilities: ["embedding"],
                                              modified_at: OllamaFormat.timestamp(modified)))
        }
        let file = try GGUFFile(path: url.path)
        let summary = ModelSummary(file)
        var info: [String: JSONValue] = [:]
        for (key, value) in file.metadata where !key.hasPrefix("tokenizer.ggml.") {
            switch value {
            case .string(let text): info[key] = .string(text)
            case .bool(let flag): info[key] = .bool(flag)
            default:
                if let number = value.doubleValue { info[key] = .number(number) }
            }
        }
        let template = file.metadata["tokenizer.chat_template"]?.stringValue ?? ""
        return try JSONBody.response(Body(
            modelfile: "FROM \(url.path)\n", parameters: "", template: template, details: details(summary), model_info: info,
            capabilities: Self.capabilities(file, template: template), modified_at: OllamaFormat.timestamp(modified)))
    }

    /// What /api/show says a language model can do: complete text, chat with a template, and
    /// think before answering.
    private static func capabilities(_ file: GGUFFile, template: String) -> [String] {
        guard !template.isEmpty else { return ["completion"] }
        let thinks = (try? ChatFormat(gguf: file))?.thinks ?? false
        return ["completion", "chat"] + (thinks ? ["thinking"] : [])
    }

    private func pull(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(OllamaModelRequest.self, limit: service.bodyLimit)
        let name = try body.required()
        if case .path = try ModelReference.parse(name) {
            throw ServerError.badRequest("Pull takes a Hub name (org/repo[:QUANT]) or an alias, not a path.", param: "model")
        }
        let progress = service.hearth.pull(name)
        guard body.stream ?? true else {
            var last: DownloadProgress?
            for try await event in progress { last = event }
            return try JSONBody.response(PullStream.Line(status: last?.phase == .done ? "success" : "incomplete"))
        }
        return PullStream.response(progress)
    }

    private func delete(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let name = try await service.models.canonicalName(try await request.decodeJSON(OllamaModelRequest.self, limit: service.bodyLimit).required())
        guard case .hub(let repo, _, _) = try? ModelReference.parse(name), service.hearth.cache.cachedRepo(repo) != nil else {
            throw ServerError.notFound("model '\(name)' not found in the cache; only pulled Hub models can be deleted.")
        }
        await service.models.unload(name)
        try service.hearth.cache.remove(repo)
        CacheUsage(cache: service.hearth.cache).forget(repo)
        return Response(status: .ok)
    }

    private func ollamaModel(_ entry: ModelEntry) -> OllamaModel {
        let details: OllamaModel.Details
        if entry.isEmbedding {
            details = .init(format: "safetensors", family: "bert", families: ["bert"], parameter_size: "", quantization_level: "F32")
        } else if let file = try? GGUFFile(path: entry.url.path) {
            details = self.details(ModelSummary(file))
        } else {
            details = .init(format: "gguf", family: "", families: [], parameter_size: "", quantization_level: "")
        }
        return OllamaModel(name: entry.name, model: entry.name, modified_at: OllamaFormat.timestamp(entry.modified), size: entry.size,
                           digest: OllamaFormat.digest(entry), details: details)
    }

    private func details(_ summary: ModelSummary) -> OllamaModel.Details {
        let family = summary.architecture ?? ""
        return .init(format: "gguf", family: family, families: [family], parameter_size: HumanReadable.count(summary.parameterCount),
                     quantization_level: summary.fileType ?? "")
    }
}
