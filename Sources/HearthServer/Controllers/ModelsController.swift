import Foundation
import Hearth
import Hummingbird

/// The models the server offers, as OpenAI's /v1/models lists them, and /v1/storage: what
/// the models take on disk, which are loaded, and which may be deleted.
struct ModelsController: Sendable {
    let service: HearthService

    func addRoutes(to v1: some RouterMethods<BasicRequestContext>) {
        v1.get("models") { _, _ in try await listModels() }
        v1.get("models/{id}") { _, context in
            let id = try context.parameters.require("id")
            return try await model(id)
        }
        // Hub names have a slash: "org/repo".
        v1.get("models/{org}/{repo}") { _, context in
            try await model("\(try context.parameters.require("org"))/\(try context.parameters.require("repo"))")
        }
        v1.get("storage") { _, _ in try await storage() }
    }

    private func listModels() async throws -> Response {
        struct Body: Encodable {
            var object = "list"
            var data: [OpenAIModel]
        }
        var data = await service.models.catalog().map(OpenAIModel.init)
        if let speech = service.speech.configured, !data.contains(where: { $0.id == speech.name }) {
            data.append(OpenAIModel(speech: speech.name, url: speech.url))
        }
        return try JSONBody.response(Body(data: data))
    }

    private func model(_ id: String) async throws -> Response {
        if let speech = service.speech.configured, id == speech.name {
            return try JSONBody.response(OpenAIModel(speech: speech.name, url: speech.url))
        }
        let name = try await service.models.canonicalName(id)
        guard let entry = await service.models.catalog().first(where: { $0.name == name }) else { throw ServerError.modelNotFound(id) }
        return try JSONBody.response(OpenAIModel(entry))
    }

    private func storage() async throws -> Response {
        struct Model: Encodable {
            var name: String
            var kind: String
            var size: Int
            var last_used: Int?
            var loaded: Bool
            var deletable: Bool
        }
        struct Body: Encodable {
            var cache_directory: String
            var total_bytes: Int
            var models: [Model]
            /// The model /v1/audio transcribes with; null without one, so the web UI can say so.
            @NullWhenAbsent var speech_model: String?
        }
        let usage = CacheUsage(cache: service.hearth.cache).entries()
        let served = await service.models.lastUsed
        let loaded = Set(await service.models.running().map(\.model.name))
        let entries = await service.models.catalog()
        var list = entries.map { entry in
            // Models named on the command line are not the cache's to delete.
            let isHub = service.configuration.models[entry.name] == nil
            return Model(name: entry.name, kind: entry.isEmbedding ? "embedding" : "language", size: entry.size,
                         last_used: (served[entry.name] ?? usage[entry.name]?.lastUsed).map { Int($0.timeIntervalSince1970) },
                         loaded: loaded.contains(entry.name),
                         deletable: isHub)
        }
        if let speech = service.speech.configured {
            let loaded = await service.speech.isLoaded
            // A speech model from the Hub cache is already listed (as a folder or file); it is marked, not repeated.
            if let index = list.firstIndex(where: { $0.name == speech.name }) {
                list[index].kind = "speech"
                list[index].loaded = loaded
            } else {
                let size = ModelManager.isDirectory(speech.url) ? ModelManager.folderSize(speech.url) : ModelManager.fileSize(speech.url)
                list.append(Model(name: speech.name, kind: "speech", size: size, last_used: nil, loaded: loaded, deletable: false))
            }
        }
        let cached = service.hearth.cache.scan().reduce(0) { $0 + $1.size }
        return try JSONBody.response(Body(cache_directory: service.hearth.cache.root.path, total_bytes: cached, models: list,
                                          speech_model: service.speech.configured?.name))
    }
}
