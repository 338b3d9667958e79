import Foundation

/// The Hub settings a process gets from its environment, read the way the huggingface_hub
/// Python package reads them, so that Hearth and Python share one cache, one token and one
/// endpoint:
///
/// - `HF_ENDPOINT` (default `https://huggingface.co`, trailing slashes dropped)
/// - the token: `HF_TOKEN`, else `HUGGING_FACE_HUB_TOKEN`, else the file at `HF_TOKEN_PATH`
///   (default `$HF_HOME/token`); surrounding spaces and line breaks removed, empty means none
/// - `HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`): offline when `1`, `ON`, `YES` or `TRUE`,
///   in any case
/// - `HF_HOME` (default `$XDG_CACHE_HOME/huggingface`, `XDG_CACHE_HOME` defaulting to
///   `~/.cache`) and the hub cache `HF_HUB_CACHE`, else the legacy `HUGGINGFACE_HUB_CACHE`,
///   else `$HF_HOME/hub`
///
/// Paths get `~` and `$VAR` expanded as Python's `expanduser` and `expandvars` do. One
/// difference: a variable set to the empty string counts as unset here, where Python would take
/// it as a path relative to the working directory.
public struct HubEnvironment: Sendable, Equatable {
    /// The Hub's base URL.
    public var endpoint: URL
    /// The access token sent as `Authorization: Bearer`, if any.
    public var token: String?
    /// Whether the network must not be used: everything comes from the cache.
    public var offline: Bool
    /// `HF_HOME`: the folder of the token file and the default cache.
    public var home: URL
    /// The hub cache (`models--org--name` folders).
    public var cacheDirectory: URL
    /// Where the token file is looked for.
    public var tokenPath: URL

    /// The public Hub.
    public static let defaultEndpoint = URL(string: "https://huggingface.co")!

    /// Settings read from `environment`; the token file is read here, once.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ name: String) -> String? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            return text
        }
        func path(_ text: String) -> String { Self.expandVariables(Self.expandTilde(text, environment: environment), environment: environment) }

        var endpointText = value("HF_ENDPOINT") ?? Self.defaultEndpoint.absoluteString
        while endpointText.hasSuffix("/") { endpointText.removeLast() }
        endpoint = URL(string: endpointText) ?? Self.defaultEndpoint

        let homeDirectory = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let xdgCache = value("XDG_CACHE_HOME") ?? (homeDirectory as NSString).appendingPathComponent(".cache")
        let homePath = path(value("HF_HOME") ?? (xdgCache as NSString).appendingPathComponent("huggingface"))
        home = URL(fileURLWithPath: homePath)
        let cachePath = value("HF_HUB_CACHE") ?? value("HUGGINGFACE_HUB_CACHE")
        cacheDirectory = cachePath.map { URL(fileURLWithPath: path($0)) } ?? home.appendingPathComponent("hub")
        tokenPath = value("HF_TOKEN_PATH").map { URL(fileURLWithPath: path($0)) } ?? home.appendingPathComponent("token")

        offline = Self.isTrue(value("HF_HUB_OFFLINE") ?? value("TRANSFORMERS_OFFLINE"))

        if let fromEnvironment = Self.cleanToken(value("HF_TOKEN") ?? value("HUGGING_FACE_HUB_TOKEN")) {
            token = fromEnvironment
        } else if let data = FileManager.default.contents(atPath: tokenPath.path) {
            token = Self.cleanToken(String(decoding: data, as: UTF8.self))
        } else {
            token = nil
        }
    }

    /// Settings given directly, for tests and for programs that do not want the environment.
    public init(endpoint: URL = HubEnvironment.defaultEndpoint, token: String? = nil, offline: Bool = false, cacheDirectory: URL) {
        self.endpoint = endpoint
        self.token = token
        self.offline = offline
        self.cacheDirectory = cacheDirectory
        home = cacheDirectory.deletingLastPathComponent()
        tokenPath = home.appendingPathComponent("token")
    }

    /// huggingface_hub's truth test for flags: `1`, `ON`, `YES`, `TRUE`, any case.
    static func isTrue(_ text: String?) -> Bool {
        guard let text else { return false }
        return ["1", "ON", "YES", "TRUE"].contains(text.uppercased())
    }

    static func cleanToken(_ text: String?) -> String? {
        guard let text else { return nil }
        let cleaned = text.replacingOccurrences(of: "\r", with: "").replacingOccurrences(of: "\n", with: "")
            .trimmingCharacters(in: .whitespaces)
        return cleaned.isEmpty ? nil : cleaned
    }

    /// `~` and `~/…` become the home directory (`HOME` first, as Python's `expanduser` does).
    static func expandTilde(_ text: String, environment: [String: String]) -> String {
        guard text == "~" || text.hasPrefix("~/") else { return text }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + text.dropFirst()
    }

    /// `$NAME` and `${NAME}` become the variable's value; unknown names stay as written, like
    /// Python's `os.path.expandvars`.
    static func expandVariables(_ text: String, environment: [String: String]) -> String {
        guard text.contains("$") else { return text }
        let characters = Array(text)
        var result = ""
        var index = 0
        func isNameCharacter(_ c: Character) -> Bool { c.isASCII && (c.isLetter || c.isNumber || c == "_") }
        while index < characters.count {
            let c = characters[index]
            guard c == "$", index + 1 < characters.count else {
                result.append(c)
                index += 1
                continue
            }
            if characters[index + 1] == "{" {
                if let close = characters[(index + 2)...].firstIndex(of: "}") {
                    let name = String(characters[(index + 2)..<close])
                    if let value = environment[name] {
                        result += value
                    } else {
                        result += String(characters[index...close])
                    }
                    index = close + 1
                    continue
                }
                result.append(c)
                index += 1
                continue
            }
            var end = index + 1
            while end < characters.count, isNameCharacter(characters[end]) { end += 1 }
            let name = String(characters[(index + 1)..<end])
            if !name.isEmpty, let value = environment[name] {
                result += value
            } else {
                result += String(characters[index..<end])
            }
            index = end
        }
        return result
    }
}
