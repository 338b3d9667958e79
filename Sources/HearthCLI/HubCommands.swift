import ArgumentParser
import Foundation
import Hearth

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command body; a `HearthError` becomes its message on standard error (and a JSON
/// error object on standard output with `--json`) and exit status 1.
func reportingErrors(json: Bool, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as HearthError {
        if json {
            printJSONLine(["event": "error", "message": error.message, "category": error.category.rawValue, "retryable": error.isRetryable])
        }
        printError("error: \(error.message)")
        throw ExitCode(1)
    }
}

struct PullCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pull",
        abstract: "Download a model into the Hugging Face cache.",
        discussion: """
            NAME is org/repo, org/repo:QUANT (the GGUF file of that quantization), \
            org/repo@REVISION, an alias (smollm2, gemma3, all-minilm) or a URL ending in \
            #sha256=HEX. Interrupted pulls resume where they stopped.
            """
    )

    @Argument(help: "The model to pull.")
    var name: String

    @Flag(help: "Print progress as JSON lines on standard output.")
    var json = false

    @Option(help: "Most connections per file (1 to 16).")
    var connections = 4

    func validate() throws {
        if connections < 1 || connections > 16 { throw ValidationError("--connections must be between 1 and 16.") }
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            var hearth = Hearth()
            hearth.downloadOptions.maximumConnectionsPerFile = connections
            let printer = ProgressPrinter(json: json)
            let file = try await hearth.pull(name) { printer.report($0) }
            if json {
                printJSONLine(["event": "done", "name": name, "path": file.path])
            } else {
                print(file.path)
            }
        }
    }
}

struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "search", abstract: "Search the Hugging Face Hub for models.")

    @Argument(help: "Text in the model's name.")
    var query: String

    @Flag(help: "Only models with GGUF files (which Hearth runs).")
    var gguf = false

    @Option(help: "Order: downloads, likes, lastModified, trending or created.")
    var sort = "downloads"

    @Option(help: "Most results.")
    var limit = 20

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if HubClient.SortOrder(rawValue: sort) == nil, !["trending", "created"].contains(sort) {
            throw ValidationError("--sort must be downloads, likes, lastModified, trending or created.")
        }
        if limit < 1 || limit > 1000 { throw ValidationError("--limit must be between 1 and 1000.") }
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            let order = HubClient.SortOrder(rawValue: sort) ?? (sort == "trending" ? .trending : .created)
            let results = try await Hearth().hubClient.search(query, filter: gguf ? "gguf" : nil, sort: order, limit: limit)
            if json {
                printJSONLine(results.map { result -> [String: Any] in
                    ["id": result.id, "downloads": result.downloads, "likes": result.likes, "pipeline_tag": result.pipelineTag ?? NSNull(),
                     "library_name": result.libraryName ?? NSNull(), "tags": result.tags]
                })
                return
            }
            guard !results.isEmpty else {
                printError("No models match \"\(query)\".")
                return
            }
            printTable(["MODEL", "DOWNLOADS", "LIKES", "TASK"], results.map {
                [$0.id, String($0.downloads), String($0.likes), $0.pipelineTag ?? ""]
            }, rightAligned: [1, 2])
        }
    }
}

/// One model in the cache as `ls` and `prune` see it.
struct CachedModel {
    var repo: CachedRepo
    var lastUsed: Date?
    var quantizations: [String]
    var path: String

    static func all(in hearth: Hearth) -> [CachedModel] {
        let usage = CacheUsage(cache: hearth.cache).entries()
        return hearth.cache.scan().map { repo in
            let files = repo.revisions.flatMap(\.files)
            let quantizations = Set(files.filter { $0.path.lowercased().hasSuffix(".gguf") }.compactMap { QuantizationPicker.quantization(of: $0.path) })
            let used = usage[repo.id]?.lastUsed ?? (repo.lastAccessed > .distantPast ? repo.lastAccessed : nil)
            return CachedModel(repo: repo, lastUsed: used, quantizations: quantizations.sorted(), path: repo.revisions.first?.url.path ?? repo.url.path)
        }
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the models in the cache.")

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        try await reportingErrors(json: json) {
            let hearth = Hearth()
            let models = CachedModel.all(in: hearth)
            let total = models.reduce(0) { $0 + $1.repo.size }
            if json {
                let iso = ISO8601DateFormatter()
                printJSONLine(["models": models.map { model -> [String: Any] in
                    ["name": model.repo.id, "quantizations": model.quantizations, "size": model.repo.size,
                     "last_used": model.lastUsed.map { iso.string(from: $0) } ?? NSNull(), "path": model.path,
                     "revisions": model.repo.revisions.map(\.commit)]
                }, "total": total, "cache": hearth.cache.root.path])
                return
            }
            if models.isEmpty {
                printError("No models in \(hearth.cache.root.path). Pull one with `hearth pull NAME`.")
                return
            }
            printTable(["NAME", "QUANT", "SIZE", "LAST USED", "PATH"], models.map {
                [$0.repo.id, $0.quantizations.joined(separator: ","), HumanReadable.bytes($0.repo.size), formatAge($0.lastUsed), $0.path]
            }, rightAligned: [2])
            print("total: \(HumanReadable.bytes(total)) in \(models.count) model\(models.count == 1 ? "" : "s")")
        }
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Details of a model: Hub information, files, chat template and capabilities.")

    @Argument(help: "The model (as for pull), cached or not.")
    var name: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        try await reportingErrors(json: json) {
            let hearth = Hearth()
            let reference = try hearth.reference(name)
            var details: [(String, Any)] = [("name", name)]
            var files: [[String: Any]] = []
            var capabilities = Set<String>()
            if case .hub(let repo, let revision, let quantization) = reference {
                details.append(("repo", repo))
                details.append(("revision", revision))
                if let quantization { details.append(("quantization", quantization)) }
                if let entry = ModelRegistry.curated.entry(repo: repo) {
                    capabilities.formUnion(entry.capabilities)
                    details.append(("context_length", entry.contextLength))
                    details.append(("summary", entry.summary))
                }
                if !hearth.configuration.hub.offline {
                    let info = try await hearth.hubClient.modelInfo(repo, revision: revision)
                    details += [("commit", info.commit), ("author", info.author ?? ""), ("downloads", info.downloads), ("likes", info.likes),
                                ("license", info.license ?? ""), ("pipeline_tag", info.pipelineTag ?? ""), ("gated", info.gated.rawValue),
                                ("last_modified", info.lastModified ?? ""), ("tags", info.tags)]
                    let cached = Set(hearth.downloader.cached(repo, revision: revision)?.files ?? [])
                    files = info.files.map { ["path": $0.path, "size": $0.size ?? 0, "sha256": $0.lfsSHA256 ?? NSNull(), "cached": cached.contains($0.path)] }
                    if info.pipelineTag == "feature-extraction" || info.pipelineTag == "sentence-similarity" { capabilities.insert("embedding") }
                } else if let snapshot = hearth.downloader.cached(repo, revision: revision) {
                    details.append(("commit", snapshot.commit))
                    files = snapshot.files.map { ["path": $0, "size": (try? FileManager.default.attributesOfItem(atPath: snapshot.url(of: $0).path)[.size] as? Int) ?? 0, "cached": true] }
                } else {
                    throw HearthError.offlineNotCached(name: name)
                }
            }
            if let file = try? hearth.cachedModelFile(name) {
                details.append(("path", file.path))
                if let gguf = try? GGUFFile(path: file.path) {
                    let summary = ModelSummary.describing(gguf)
                    details.append(("architecture", summary.architecture ?? ""))
                    if let family = summary.family { details.append(("family", family)) }
                    details.append(("parameters", summary.parameterCount))
                    if let context = summary.contextLength { details.append(("context_length", context)) }
                    if let source = summary.templateSource { details.append(("template_source", source)) }
                    if let sampling = summary.recommendedSampling { details.append(("recommended_sampling", sampling)) }
                    details.append(("chat_template", summary.chatTemplate ?? ""))
                    capabilities = Set(summary.capabilities ?? [])
                }
            }
            details.append(("capabilities", capabilities.sorted()))
            if json {
                var object: [String: Any] = [:]
                var seen = Set<String>()
                for (key, value) in details.reversed() where seen.insert(key).inserted { object[key] = value }
                object["files"] = files
                printJSONLine(object)
                return
            }
            var seen = Set<String>()
            for (key, value) in details where seen.insert(key).inserted {
                if key == "chat_template" { continue }
                let text = (value as? [String]).map { $0.joined(separator: ", ") } ?? "\(value)"
                guard !text.isEmpty else { continue }
                print("\(key.replacingOccurrences(of: "_", with: " ")): \(text)")
            }
            if !files.isEmpty {
                print("files:")
                printTable(["  PATH", "SIZE", "CACHED"], files.map {
                    ["  " + ($0["path"] as? String ?? ""), HumanReadable.bytes($0["size"] as? Int ?? 0), ($0["cached"] as? Bool ?? false) ? "yes" : ""]
                }, rightAligned: [1])
            }
            if let template = details.first(where: { $0.0 == "chat_template" })?.1 as? String, !template.isEmpty {
                print("chat template:\n\(template)")
            }
        }
    }
}

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete a model from the cache.")

    @Argument(help: "The model: org/repo or an alias.")
    var name: String

    @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
    var yes = false

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        try await reportingErrors(json: json) {
            let hearth = Hearth()
            guard case .hub(let repo, _, _) = try hearth.reference(name) else {
                throw HearthError.invalidArgument("\(name) is not a cached Hub model; rm deletes models from the cache (see `hearth ls`).")
            }
            guard let cached = hearth.cache.cachedRepo(repo) else { throw HearthError.modelNotFound(name: name) }
            if !yes {
                guard isatty(STDIN_FILENO) != 0 else {
                    throw HearthError.invalidArgument("Deleting \(repo) needs confirmation: pass -y.")
                }
                guard confirm("Delete \(repo) (\(HumanReadable.bytes(cached.size)))?", defaultYes: false) else {
                    printError("Nothing deleted.")
                    return
                }
            }
            let freed = try hearth.cache.remove(repo)
            CacheUsage(cache: hearth.cache).forget(repo)
            if json {
                printJSONLine(["removed": [repo], "freed": freed])
            } else {
                print("deleted \(repo), freed \(HumanReadable.bytes(freed))")
            }
        }
    }
}

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune", abstract: "Delete the least recently used models until the cache fits in a size.")

    @Option(help: "Size to keep the cache under: 500M, 10G, 1.5GiB (units are powers of 1024).")
    var keep: String

    @Flag(name: .shortAndLong, help: "Do not ask for confirmation.")
    var yes = false

    @Flag(help: "Only say what would be deleted.")
    var dryRun = false

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if parseSize(keep) == nil { throw ValidationError("--keep must be a size such as 500M or 10G.") }
    }

    func run() async throws {
        try await reportingErrors(json: json) {
            let hearth = Hearth()
            let limit = parseSize(keep)!
            let models = CachedModel.all(in: hearth).sorted { ($0.lastUsed ?? .distantPast) < ($1.lastUsed ?? .distantPast) }
            var total = models.reduce(0) { $0 + $1.repo.size }
            var doomed: [CachedModel] = []
            for model in models where total > limit {
                doomed.append(model)
                total -= model.repo.size
            }
            if !doomed.isEmpty, !yes, !dryRun {
                guard isatty(STDIN_FILENO) != 0 else {
                    throw HearthError.invalidArgument("Pruning \(doomed.count) model(s) needs confirmation: pass -y (or --dry-run to see them).")
                }
                let names = doomed.map(\.repo.id).joined(separator: ", ")
                guard confirm("Delete \(names)?", defaultYes: false) else {
                    printError("Nothing deleted.")
                    return
                }
            }
            var freed = 0
            if !dryRun {
                for model in doomed {
                    freed += try hearth.cache.remove(model.repo.id)
                    CacheUsage(cache: hearth.cache).forget(model.repo.id)
                }
            }
            if json {
                printJSONLine(["removed": doomed.map(\.repo.id), "freed": dryRun ? 0 : freed, "kept": total, "dry_run": dryRun])
                return
            }
            if doomed.isEmpty {
                print("The cache holds \(HumanReadable.bytes(total)), within \(HumanReadable.bytes(limit)); nothing to delete.")
            }
            for model in doomed {
                print("\(dryRun ? "would delete" : "deleted") \(model.repo.id) (\(HumanReadable.bytes(model.repo.size)), last used \(formatAge(model.lastUsed)))")
            }
            if !doomed.isEmpty { print("cache now \(HumanReadable.bytes(total))") }
        }
    }
}

/// Prints rows in aligned columns.
func printTable(_ header: [String], _ rows: [[String]], rightAligned: Set<Int> = []) {
    let all = [header] + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    for row in all {
        let cells = row.enumerated().map { column, text -> String in
            let pad = String(repeating: " ", count: widths[column] - text.count)
            if column == row.count - 1, !rightAligned.contains(column) { return text }
            return rightAligned.contains(column) ? pad + text : text + pad
        }
        print(cells.joined(separator: "  "))
    }
}
