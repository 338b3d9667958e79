import Foundation
import Hearth

/// How long a model stays loaded after its last request: Ollama's `keep_alive`.
enum KeepAlive: Sendable, Equatable {
    case forever
    case seconds(Double)

    /// Parses Ollama's forms: a number of seconds, or a duration string ("5m", "30s", "1h",
    /// "1h30m", "0"); a negative value keeps the model loaded for good.
    init(json: JSONValue) throws {
        switch json {
        case .number(let value):
            self = value < 0 ? .forever : .seconds(value)
        case .string(let text):
            self = try KeepAlive(text)
        default:
            throw ServerError.badRequest("keep_alive must be a number of seconds or a duration such as \"5m\".", param: "keep_alive")
        }
    }

    init(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let value = Double(trimmed) {
            self = value < 0 ? .forever : .seconds(value)
            return
        }
        if trimmed.hasPrefix("-") {
            self = .forever
            return
        }
        let units: [Character: Double] = ["h": 3600, "m": 60, "s": 1]
        var total = 0.0
        var number = ""
        var index = trimmed.startIndex
        while index < trimmed.endIndex {
            let character = trimmed[index]
            if character.isNumber || character == "." {
                number.append(character)
            } else if character == "m", trimmed[trimmed.index(after: index)...].hasPrefix("ms"), let value = Double(number) {
                total += value / 1000
                number = ""
                index = trimmed.index(index, offsetBy: 2)
                continue
            } else if let unit = units[character], let value = Double(number) {
                total += value * unit
                number = ""
            } else {
                throw ServerError.badRequest("keep_alive \"\(text)\" is not a duration; use forms such as \"5m\", \"30s\", \"1h\" or -1.",
                                             param: "keep_alive")
            }
            index = trimmed.index(after: index)
        }
        guard number.isEmpty, !trimmed.isEmpty else {
            throw ServerError.badRequest("keep_alive \"\(text)\" needs a unit (s, m or h).", param: "keep_alive")
        }
        self = .seconds(total)
    }
}

/// A model in memory, shared by every request that names it.
final class LoadedModel: Sendable {
    enum Kind: Sendable {
        case language(LocalModel, SlotPool)
        case embedding(Embedder)
        case reranker(Reranker)
    }

    let name: String
    let kind: Kind
    let url: URL
    /// Bytes of its files on disk.
    let size: Int
    /// Bytes it holds in memory, as Ollama's /api/ps counts them: its files and, for a language
    /// model, every slot's KV cache.
    var memoryBytes: Int {
        guard case .language(let model, let slots) = kind else { return size }
        return size + model.cacheBytesPerContext * slots.slotCount
    }
    let loadedAt: Date
    let loadSeconds: Double

    init(name: String, kind: Kind, url: URL, size: Int, loadedAt: Date, loadSeconds: Double) {
        self.name = name
        self.kind = kind
        self.url = url
        self.size = size
        self.loadedAt = loadedAt
        self.loadSeconds = loadSeconds
    }
}

/// A model the server can name: registered on its command line or in the Hugging Face cache.
struct ModelEntry: Sendable {
    var name: String
    var url: URL
    var size: Int
    var modified: Date
    var isEmbedding: Bool
}

/// The models the server has loaded: loads on first use (once, however many requests ask at
/// the same time), counts the requests using each, and unloads those idle past their
/// keep-alive.
actor ModelManager {
    let hearth: Hearth
    /// Names given on the command line, to the file or folder they stand for.
    let registered: [String: URL]
    let defaultModel: String?
    let parallel: Int
    let queueLimit: Int
    let defaultKeepAlive: KeepAlive

    private var loaded: [String: LoadedModel] = [:]
    private var loading: [String: Task<LoadedModel, any Error>] = [:]
    private var inUse: [String: Int] = [:]
    private var expiry: [String: Date] = [:]
    /// When each model last finished a request, since the server started.
    private(set) var lastUsed: [String: Date] = [:]

    init(hearth: Hearth, registered: [String: URL], defaultModel: String?, parallel: Int, queueLimit: Int,
         defaultKeepAlive: KeepAlive) {
        self.hearth = hearth
        self.registered = registered
        self.defaultModel = defaultModel
        self.parallel = parallel
        self.queueLimit = queueLimit
        self.defaultKeepAlive = defaultKeepAlive
    }

    /// The name requests use for `name`: the default for an empty one, Ollama's ":latest"
    /// dropped.
    func canonicalName(_ name: String?) throws -> String {
        var name = (name ?? "").trimmingCharacters(in: .whitespaces)
        if name.isEmpty {
            guard let defaultModel else {
                throw ServerError.badRequest("Name a model in the request's \"model\" field.", param: "model")
            }
            name = defaultModel
        }
        if name.hasSuffix(":latest") { name.removeLast(":latest".count) }
        return name
    }

    /// Where the model called `name` is on disk. Only registered names and models in the hub
    /// cache are served: a client cannot make the server open an arbitrary path.
    func locate(_ name: String) throws -> URL {
        if let url = registered[name] { return url }
        let reference: ModelReference
        do {
            reference = try ModelReference.parse(name)
        } catch {
            throw ServerError.modelNotFound(name)
        }
        if case .path = reference { throw ServerError.modelNotFound(name) }
        guard let url = try? hearth.cachedModel(reference) else { throw ServerError.modelNotFound(name) }
        return url
    }

    /// The model called `name`, loaded if it is not yet, marked in use until `release`.
    func acquire(_ name: String) async throws -> LoadedModel {
        let model = try await load(name)
        inUse[model.name, default: 0] += 1
        expiry[model.name] = nil
        return model
    }

    /// Ends a use of `model`; it stays loaded for `keepAlive` (default: the server's) once no
    /// request uses it.
    func release(_ model: LoadedModel, keepAlive: KeepAlive?) {
        let count = (inUse[model.name] ?? 1) - 1
        inUse[model.name] = count
        lastUsed[model.name] = Date()
        guard count == 0, loaded[model.name] === model else { return }
        switch keepAlive ?? defaultKeepAlive {
        case .forever: expiry[model.name] = nil
        case .seconds(let seconds):
            if seconds <= 0 {
                unload(model.name)
            } else {
                expiry[model.name] = Date().addingTimeInterval(seconds)
            }
        }
    }

    /// Loads `name` now, to stay for `keepAlive` (Ollama's empty-prompt load); a keep-alive
    /// of 0 unloads it instead.
    func preload(_ name: String, keepAlive: KeepAlive?) async throws -> LoadedModel? {
        let name = try canonicalName(name)
        if keepAlive == .seconds(0) {
            unload(name)
            return nil
        }
        let model = try await acquire(name)
        release(model, keepAlive: keepAlive)
        return model
    }

    /// Drops `name` from memory once its current requests finish.
    func unload(_ name: String) {
        loaded[name] = nil
        expiry[name] = nil
    }

    /// Unloads models whose keep-alive has passed.
    func sweep(now: Date = Date()) {
        for (name, date) in expiry where date <= now && (inUse[name] ?? 0) == 0 {
            unload(name)
        }
    }

    /// The loaded models with the time each will be unloaded (nil: not while in use, or never).
    func running() -> [(model: LoadedModel, expiresAt: Date?)] {
        loaded.values.sorted { $0.name < $1.name }.map { ($0, expiry[$0.name]) }
    }

    /// Every model the server can serve: registered ones, then the hub cache's.
    func catalog() -> [ModelEntry] {
        var entries: [ModelEntry] = registered.sorted { $0.key < $1.key }.map { name, url in
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
            let isDirectory = (attributes?[.type] as? FileAttributeType) == .typeDirectory
            return ModelEntry(name: name, url: url, size: isDirectory ? Self.folderSize(url) : (attributes?[.size] as? Int ?? 0),
                              modified: attributes?[.modificationDate] as? Date ?? Date(), isEmbedding: isDirectory)
        }
        for repo in hearth.cache.scan() where registered[repo.id] == nil {
            guard let url = try? hearth.cachedModel(ModelReference.parse(repo.id)) else { continue }
            entries.append(ModelEntry(name: repo.id, url: url, size: repo.size, modified: repo.lastModified,
                                      isEmbedding: url.hasDirectoryPath || Self.isDirectory(url)))
        }
        return entries
    }

    private func load(_ requested: String) async throws -> LoadedModel {
        let name = try canonicalName(requested)
        if let model = loaded[name] { return model }
        if let task = loading[name] { return try await task.value }
        let url = try locate(name)
        let hearth = self.hearth
        let parallel = self.parallel
        let queueLimit = self.queueLimit
        let task = Task.detached { () throws -> LoadedModel in
            let clock = ContinuousClock()
            let started = clock.now
            let kind: LoadedModel.Kind
            let size: Int
            if Self.isDirectory(url) {
                // A folder is a sentence-transformers model, or a cross-encoder when its config
                // names a classification head.
                if CrossEncoderModel.isCrossEncoder(directory: url) {
                    kind = .reranker(try Reranker(path: url.path, name: name, threads: hearth.configuration.threads))
                } else {
                    kind = .embedding(try Embedder(path: url.path, name: name, threads: hearth.configuration.threads))
                }
                size = Self.folderSize(url)
            } else {
                let model = try LocalModel(path: url.path, name: name, threads: hearth.configuration.threads,
                                           contextLength: hearth.configuration.contextLength,
                                           memoryLimit: hearth.configuration.memoryLimit, batchedGenerations: max(parallel, 1),
                                           promptCacheBytes: hearth.configuration.promptCacheBytes,
                                           cacheTypes: hearth.configuration.cacheTypes)
                kind = .language(model, SlotPool(model: model, count: parallel, queueLimit: queueLimit))
                size = model.engine.gguf.fileSize
            }
            return LoadedModel(name: name, kind: kind, url: url, size: size, loadedAt: Date(),
                               loadSeconds: (clock.now - started) / .seconds(1))
        }
        loading[name] = task
        defer { loading[name] = nil }
        let model = try await task.value
        loaded[name] = model
        return model
    }

    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    static func fileSize(_ url: URL) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int ?? 0
    }

    static func folderSize(_ url: URL) -> Int {
        var total = 0
        let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.fileSizeKey])
        while let file = enumerator?.nextObject() as? URL {
            total += (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }
}
