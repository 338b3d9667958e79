import Foundation
import HearthCore

/// Where a server keeps its chat threads: a SQLite file (the default) or a PostgreSQL database
/// that several servers share.
public enum ChatDatabase: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite file at this path (`SQLiteChatStore`).
    case sqlite(path: String)
    /// A PostgreSQL database (`PostgresChatStore`).
    case postgres(PostgresURL)

    /// The environment variable that names the database when `--database` is not given.
    public static let environmentVariable = "HEARTH_DATABASE_URL"

    /// What `text` names: a `postgres://` or `postgresql://` URL is a PostgreSQL database, any
    /// other text without a scheme is the path of a SQLite file. `source` (the option or
    /// variable the text came from) is named in errors, which never show a password.
    public init(_ text: String, source: String = "--database",
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        if let url = try PostgresURL(ifPostgres: text, source: source, environment: environment) {
            self = .postgres(url)
            return
        }
        // Another scheme (mysql://, a postgres typo) must not quietly become a file named
        // "mysql:" in the working directory.
        if let range = text.range(of: "://"), !text[..<range.lowerBound].contains("/") {
            let scheme = text[..<range.lowerBound]
            throw HearthError.invalidArgument(
                "\(source): \(PostgresURL.redacting(text)) is a \(scheme) URL; Hearth keeps chats in PostgreSQL (postgres://user@host:port/database) or in a SQLite file (give its path).")
        }
        self = .sqlite(path: text)
    }

    /// The database `hearth serve` uses: `option` (its `--database`) when given, else
    /// `$HEARTH_DATABASE_URL`, else the SQLite file at `SQLiteChatStore.defaultPath`. Empty
    /// values count as unset.
    public static func chosen(option: String?,
                              environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ChatDatabase {
        if let option, !option.isEmpty { return try ChatDatabase(option, source: "--database", environment: environment) }
        if let variable = environment[environmentVariable], !variable.isEmpty {
            return try ChatDatabase(variable, source: environmentVariable, environment: environment)
        }
        return .sqlite(path: SQLiteChatStore.defaultPath(environment: environment))
    }

    /// The file path, or the URL without its password.
    public var description: String {
        switch self {
        case .sqlite(let path): return path
        case .postgres(let url): return url.description
        }
    }
}

/// The parts of a `postgres://user:password@host:port/database?sslmode=…` URL, read as libpq
/// reads them: the port defaults to 5432, the user to the system user, the database to the
/// user's name, the password to `$PGPASSWORD`, and `sslmode` to `prefer`.
///
/// Its `description` leaves the password out, so it is safe to print and log.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    /// Whether the connection is encrypted, as libpq's `sslmode` says.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Never.
        case disable
        /// When the server offers it, without checking its certificate.
        case prefer
        /// Always, without checking the server's certificate.
        case require
        /// Always, with a certificate signed by a trusted authority (any host name).
        case verifyCA = "verify-ca"
        /// Always, with a trusted certificate for this host name.
        case verifyFull = "verify-full"
    }

    /// The role to log in as.
    public var user: String
    /// Its password, if the server asks for one.
    public var password: String?
    /// The server's host name or IP address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The database's name.
    public var database: String
    /// Whether to encrypt the connection.
    public var tls: TLSMode
    /// A PEM file of the authorities to trust for `verify-ca` and `verify-full` (libpq's
    /// `sslrootcert`); nil means the system's.
    public var rootCertificatePath: String?

    /// A URL with these parts.
    public init(user: String, password: String? = nil, host: String, port: Int = 5432, database: String,
                tls: TLSMode = .prefer, rootCertificatePath: String? = nil) {
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
        self.rootCertificatePath = rootCertificatePath
    }

    /// Reads a `postgres://` or `postgresql://` URL; errors name `source` and never show the
    /// password.
    public init(_ text: String, source: String = "--database",
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let url = try PostgresURL(ifPostgres: text, source: source, environment: environment) else {
            throw HearthError.invalidArgument(
                "\(source): \(Self.redacting(text)) is not a PostgreSQL URL; write postgres://user@host:port/database.")
        }
        self = url
    }

    /// nil when `text` is not a PostgreSQL URL at all.
    init?(ifPostgres text: String, source: String, environment: [String: String]) throws {
        let lowered = text.lowercased()
        guard lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") else { return nil }
        let shown = Self.redacting(text)
        func invalid(_ problem: String) -> HearthError {
            .invalidArgument("\(source): the PostgreSQL URL \(shown) \(problem). Write postgres://user:password@host:port/database?sslmode=require (or sslmode=disable).")
        }
        guard let components = URLComponents(string: text) else { throw invalid("is not a valid URL (a port that is not a number, or a character to percent-encode)") }
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw invalid("names no host") }
        let port = components.port ?? 5432
        guard (1...65_535).contains(port) else { throw invalid("has the port \(port), outside 1–65535") }
        var path = components.path
        if path.hasPrefix("/") { path.removeFirst() }
        guard !path.contains("/") else { throw invalid("has a path of more than one part; give just the database name") }
        let user = components.user.flatMap { $0.isEmpty ? nil : $0 } ?? ProcessInfo.processInfo.userName
        let password = components.password ?? environment["PGPASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        var tls = TLSMode.prefer
        var rootCertificatePath: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    throw invalid("has sslmode=\(item.value ?? ""); use one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tls = mode
            case "sslrootcert":
                guard let value = item.value, !value.isEmpty else { throw invalid("has an empty sslrootcert") }
                rootCertificatePath = value
            default:
                throw invalid("has the parameter \(item.name), which Hearth does not know (it reads sslmode and sslrootcert)")
            }
        }
        self.init(user: user, password: password, host: host, port: port, database: path.isEmpty ? user : path, tls: tls,
                  rootCertificatePath: rootCertificatePath)
    }

    /// "host:port", as errors name the server.
    public var server: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The URL with "***" for the password.
    public var description: String {
        func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@/"))) ?? text
        }
        var text = "postgres://\(encoded(user))\(password == nil ? "" : ":***")@\(server)/\(encoded(database))"
        var parameters: [String] = []
        if tls != .prefer { parameters.append("sslmode=\(tls.rawValue)") }
        if let rootCertificatePath { parameters.append("sslrootcert=\(rootCertificatePath)") }
        if !parameters.isEmpty { text += "?" + parameters.joined(separator: "&") }
        return text
    }

    /// `text` with any password in it replaced by "***", for errors about text that may not
    /// even parse. Everything between the first ':' of the user part and the last '@' goes,
    /// so a password with an unencoded '@' or '/' is hidden too.
    public static func redacting(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text.range(of: "@", options: .backwards),
              at.lowerBound > scheme.upperBound else { return text }
        let userInfo = text[scheme.upperBound..<at.lowerBound]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at.lowerBound...])
    }
}
