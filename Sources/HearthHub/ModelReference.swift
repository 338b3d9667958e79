import Foundation
import HearthCore

/// What a user typed to name a model, parsed:
///
/// - `org/repo`, `org/repo@revision`, `org/repo:Q4_K_M` (pick the GGUF file of that
///   quantization), `org/repo@revision:Q4_K_M`
/// - a local path: starts with `/`, `./`, `../` or `~`, or ends in `.gguf`
/// - a URL, `https://…/model.gguf#sha256=<hex>` (the sha256 is required to pull)
/// - an alias from the curated registry (`smollm2`, `gemma3:Q8_0`)
public enum ModelReference: Sendable, Equatable {
    /// A repository on the Hub.
    case hub(repo: String, revision: String, quantization: String?)
    /// A file on disk.
    case path(String)
    /// A file at a plain URL, with the sha256 it must have.
    case url(URL, sha256: String?)

    /// Parses `text`; aliases are looked up in `registry`.
    public static func parse(_ text: String, registry: ModelRegistry = .curated) throws -> ModelReference {
        let name = text.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw HearthError.invalidArgument("A model name is empty.") }
        if name.hasPrefix("https://") || name.hasPrefix("http://") {
            guard var components = URLComponents(string: name), components.host != nil else {
                throw HearthError.invalidArgument("\"\(name)\" is not a valid URL.")
            }
            var sha256: String?
            if let fragment = components.fragment, fragment.hasPrefix("sha256=") {
                sha256 = String(fragment.dropFirst("sha256=".count)).lowercased()
                components.fragment = nil
            }
            return .url(components.url!, sha256: sha256)
        }
        if name.hasPrefix("/") || name.hasPrefix("./") || name.hasPrefix("../") || name.hasPrefix("~") || name.lowercased().hasSuffix(".gguf") {
            return .path((name as NSString).expandingTildeInPath)
        }
        var rest = Substring(name)
        var quantization: String?
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("/") {
            quantization = String(rest[rest.index(after: colon)...])
            rest = rest[..<colon]
            guard !quantization!.isEmpty else { throw HearthError.invalidArgument("\"\(name)\" ends in \":\" with no quantization after it.") }
        }
        var revision = "main"
        if let at = rest.firstIndex(of: "@") {
            revision = String(rest[rest.index(after: at)...])
            rest = rest[..<at]
            guard !revision.isEmpty else { throw HearthError.invalidArgument("\"\(name)\" has an empty revision after \"@\".") }
        }
        if !rest.contains("/") {
            guard let entry = registry.entry(String(rest)) else {
                throw HearthError.modelNotFound(name: name)
            }
            return .hub(repo: entry.repo, revision: revision == "main" ? entry.revision : revision,
                        quantization: quantization ?? entry.recommendedQuantization)
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.unicodeScalars.allSatisfy(allowed.contains) }) else {
            throw HearthError.invalidArgument("\"\(name)\" is not a model name: use org/repo, org/repo:QUANT, org/repo@revision, a path or an alias.")
        }
        return .hub(repo: String(rest), revision: revision, quantization: quantization)
    }

    /// The name in the form `parse` reads back.
    public var description: String {
        switch self {
        case .hub(let repo, let revision, let quantization):
            return repo + (revision == "main" ? "" : "@\(revision)") + (quantization.map { ":\($0)" } ?? "")
        case .path(let path): return path
        case .url(let url, let sha256): return url.absoluteString + (sha256.map { "#sha256=\($0)" } ?? "")
        }
    }
}

/// Choosing files of a repository by quantization.
public enum QuantizationPicker {
    /// Quantizations in the order Hearth prefers when none is asked for: good quality for the
    /// size first.
    public static let preference = ["Q4_K_M", "Q4_K_S", "Q5_K_M", "Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q6_K", "Q5_K_S", "Q3_K_M", "F16", "BF16", "F32"]

    /// The quantization named in a GGUF file name, if any (`model-Q4_K_M.gguf` → `Q4_K_M`).
    public static func quantization(of path: String) -> String? {
        let name = (path as NSString).lastPathComponent.uppercased()
        let tokens = name.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
        for token in tokens {
            let text = String(token)
            if text.range(of: #"^(I?Q[0-9]_[A-Z0-9_]+|Q[0-9]_[0-9]|Q[0-9]|F16|F32|BF16)$"#, options: .regularExpression) != nil {
                return text
            }
        }
        return nil
    }

    /// The whisper.cpp models of a repository (`ggml-base.bin`, `ggml-base-q8_0.bin`, as in
    /// `ggerganov/whisper.cpp`), by the name between `ggml-` and `.bin`.
    static func whisperCppModels(_ files: [HubFile]) -> [String: HubFile] {
        var models: [String: HubFile] = [:]
        for file in files where !file.path.contains("/") && file.path.hasPrefix("ggml-") && file.path.hasSuffix(".bin") {
            models[String(file.path.dropFirst("ggml-".count).dropLast(".bin".count))] = file
        }
        return models
    }

    /// The GGUF files of `files` for `quantization` (all shards of a split file), or with
    /// none asked for, those of the most preferred quantization present. In a repository of
    /// whisper.cpp files and no GGUF, the one `quantization` names (`base` for
    /// `ggml-base.bin`); it must name one, since such a repository holds every size. Empty
    /// when the repository has neither.
    public static func pick(_ files: [HubFile], quantization: String?) throws -> [HubFile] {
        let ggufs = files.filter { $0.path.lowercased().hasSuffix(".gguf") }
        guard !ggufs.isEmpty else {
            let whisper = whisperCppModels(files)
            if !whisper.isEmpty {
                let names = whisper.keys.sorted()
                let choices = names.prefix(12).joined(separator: ", ") + (names.count > 12 ? "…" : "")
                guard let quantization else {
                    throw HearthError.invalidArgument("The repository holds \(names.count) whisper.cpp models (\(choices)): name one after a colon, such as :\(names.contains("base") ? "base" : names[0]) for ggml-\(names.contains("base") ? "base" : names[0]).bin.")
                }
                guard let file = whisper[quantization] ?? whisper.first(where: { $0.key.lowercased() == quantization.lowercased() })?.value else {
                    throw HearthError.invalidArgument("No ggml-\(quantization).bin in the repository; it has \(choices).")
                }
                return [file]
            }
            if let quantization { throw HearthError.invalidArgument("The repository has no GGUF files, so there is no \(quantization) to pick.") }
            return []
        }
        let quantized = Dictionary(grouping: ggufs) { self.quantization(of: $0.path) ?? "" }
        if let quantization {
            let wanted = quantization.uppercased()
            guard let chosen = quantized[wanted] else {
                let available = quantized.keys.filter { !$0.isEmpty }.sorted().joined(separator: ", ")
                throw HearthError.invalidArgument("No \(quantization) file in the repository; it has \(available.isEmpty ? "no quantization in its file names" : available).")
            }
            return chosen.sorted { $0.path < $1.path }
        }
        for preferred in preference {
            if let chosen = quantized[preferred] { return chosen.sorted { $0.path < $1.path } }
        }
        // Unknown names: the smallest file is the safest guess for a machine of any size.
        let smallest = ggufs.min { ($0.size ?? .max) < ($1.size ?? .max) }!
        return [smallest]
    }
}
