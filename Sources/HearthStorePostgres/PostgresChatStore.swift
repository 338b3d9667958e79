import Foundation
import HearthCore
import HearthStore
import Logging
import PostgresNIO

/// Chat threads and their messages in a PostgreSQL database, which several `hearth serve`
/// processes (replicas) can share.
///
/// It keeps every promise of `ChatStore` as `SQLiteChatStore` does, with what sharing needs:
/// "Chat N" numbers, message ids and the order of the thread list come from sequences, so
/// servers writing at the same moment never hand out the same name and never wait for each
/// other; times come from the database server's clock, so servers agree on them; each write is
/// one transaction.
///
/// Opening connects once, to report a wrong URL, password or database at once and by name, and
/// brings the tables up to date. Queries then go through a pool of connections, run by a task
/// that lives as long as the store: `close()` ends it (and so does releasing the store).
///
/// ```swift
/// let store = try await PostgresChatStore(url: PostgresURL("postgres://hearth@db.internal/hearth"))
/// let thread = try await store.createThread()
/// ```
public final class PostgresChatStore: ChatStore {
    /// The database.
    public let url: PostgresURL
    /// The URL without its password.
    public var location: String { url.description }

    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// The connections one store may hold open at once.
    public static let maximumConnections = 10

    /// Connects to the database, checks that it is Hearth's (or empty) and brings its tables up
    /// to date, then starts the connection pool. `logger` gets the pool's own messages about
    /// connections it loses and makes again (none by default).
    ///
    /// Throws `HearthError.chatDatabaseUnreachable` when the server cannot be reached or refuses
    /// the login (naming the host and port), `chatStoreTooNew` for a database a newer Hearth has
    /// migrated, and `chatStoreDamaged` for another application's tables.
    public init(url: PostgresURL, logger: Logger? = nil) async throws {
        self.url = url
        let logger = logger ?? Logger(label: "hearth.store.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        self.logger = logger
        let location = url.description
        let (clientConfiguration, connectionConfiguration) = try Self.configurations(url)
        do {
            let connection = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 0, logger: logger)
            do {
                try await PostgresSchema.migrate(connection, location: location, logger: logger)
            } catch {
                try? await connection.close()
                throw error
            }
            try? await connection.close()
        } catch {
            throw PostgresErrors.translate(error, url: url)
        }
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.client = client
        runner = Task { await client.run() }
    }

    deinit {
        runner.cancel()
    }

    /// Closes the pool's connections; calls after this fail with `chatStoreFailed`.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    // MARK: Threads

    /// A new, empty thread named "Chat N", N the next value of the database's `thread_number`
    /// sequence. An empty or blank `model` or `preset` means the server's default (nil).
    public func createThread(model: String? = nil, preset: String? = nil, systemPrompt: String? = nil) async throws -> ChatThread {
        let model = StoreValidation.settingName(model)
        let preset = StoreValidation.settingName(preset)
        return try await write { connection in
            try await self.insertThread(connection, name: nil, model: model, preset: preset, systemPrompt: systemPrompt)
        }
    }

    /// A new thread holding `messages`, in their order, for a conversation brought in from
    /// elsewhere (an exported thread). The thread and its messages are written in one
    /// transaction: a refused message leaves no thread behind. A nil `name` means "Chat N";
    /// a given one is checked as `renameThread` checks it. Roles and statistics are checked as
    /// `appendMessage` checks them. The messages take the thread's creation time.
    public func importThread(name: String?, model: String? = nil, preset: String? = nil, systemPrompt: String? = nil,
                             messages: [NewMessage]) async throws -> ChatThread {
        let checked = try StoreValidation.importedThread(name: name, model: model, preset: preset, messages: messages)
        return try await write { [checked] connection in
            let thread = try await self.insertThread(connection, name: checked.name, model: checked.model, preset: checked.preset,
                                                     systemPrompt: systemPrompt)
            // One at a time, so that ids grow in the messages' order.
            for message in checked.messages {
                _ = try await connection.query("""
                    INSERT INTO message (thread_id, role, content, created_at, completion_tokens, tokens_per_second, reasoning)
                    SELECT id, \(message.role), \(PostgresText.encode(message.content)), created_at, \(message.completionTokens),
                           \(message.tokensPerSecond), \(PostgresText.encode(message.reasoning))
                    FROM thread WHERE id = \(thread.id)
                    """, logger: self.logger).collect()
            }
            return thread
        }
    }

    /// Every thread, the most recently updated first.
    public func threads() async throws -> [ChatThread] {
        try await read { connection in
            try await connection.query("SELECT \(unescaped: SQL.threadColumns) FROM thread ORDER BY activity DESC", logger: self.logger)
                .collect().map(Self.thread(from:))
        }
    }

    /// The threads whose name, or the text of any of whose messages, contains `text`, ignoring
    /// case and diacritics; the most recently updated first. Text of only spaces matches every
    /// thread, as an empty search box shows them all.
    ///
    /// The text is compared in Swift by `TextSearch.contains`, as SQLite's store compares it,
    /// so both engines find the same threads: PostgreSQL's lower() and ILIKE depend on the
    /// database's collation and locale, and its unaccent extension may not be installed. The
    /// rows are streamed from one statement (one snapshot), not collected.
    public func threads(matching text: String) async throws -> [ChatThread] {
        let needle = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if needle.isEmpty { return try await threads() }
        return try await read { connection in
            let rows = try await connection.query("""
                SELECT \(unescaped: SQL.threadColumns("t")), m.content
                FROM thread AS t LEFT JOIN message AS m ON m.thread_id = t.id
                ORDER BY t.activity DESC, t.id, m.id
                """, logger: self.logger)
            var found: [ChatThread] = []
            var decided: String?
            for try await row in rows {
                let (id, _, _, _, _, _, _, content) =
                    try row.decode((String, String, String?, String?, String?, Int64, Int64, String?).self)
                if id == decided { continue }
                let thread = try Self.thread(from: row)
                if TextSearch.contains(thread.name, needle) {
                    found.append(thread)
                    decided = id
                    continue
                }
                if let content, TextSearch.contains(PostgresText.decode(content), needle) {
                    found.append(thread)
                    decided = id
                }
            }
            return found
        }
    }

    /// The thread with this id, or nil if there is none.
    public func thread(id: String) async throws -> ChatThread? {
        try await read { connection in
            try await connection.query("SELECT \(unescaped: SQL.threadColumns) FROM thread WHERE id = \(id)", logger: self.logger)
                .collect().first.map(Self.thread(from:))
        }
    }

    /// Renames a thread. The name is trimmed; it must not be empty and may have at most
    /// `ChatThread.maximumNameLength` characters.
    public func renameThread(id: String, to name: String) async throws -> ChatThread {
        let name = try StoreValidation.threadName(name)
        return try await write { connection in
            try self.touched(id: id, try await connection.query("""
                UPDATE thread SET name = \(PostgresText.encode(name)), \(unescaped: SQL.touch)
                WHERE id = \(id) RETURNING \(unescaped: SQL.threadColumns)
                """, logger: self.logger).collect())
        }
    }

    /// Replaces a thread's settings; nil (or an empty model or preset name) means the server's
    /// default.
    public func updateSettings(id: String, model: String?, preset: String?, systemPrompt: String?) async throws -> ChatThread {
        let model = StoreValidation.settingName(model)
        let preset = StoreValidation.settingName(preset)
        return try await write { connection in
            try self.touched(id: id, try await connection.query("""
                UPDATE thread SET model = \(PostgresText.encode(model)), preset = \(PostgresText.encode(preset)),
                    system_prompt = \(PostgresText.encode(systemPrompt)), \(unescaped: SQL.touch)
                WHERE id = \(id) RETURNING \(unescaped: SQL.threadColumns)
                """, logger: self.logger).collect())
        }
    }

    /// Deletes a thread and all its messages. Its number is not handed out again.
    public func deleteThread(id: String) async throws {
        try await write { connection in
            // The foreign key's ON DELETE CASCADE removes the messages in the same transaction.
            let rows = try await connection.query("DELETE FROM thread WHERE id = \(id) RETURNING id", logger: self.logger).collect()
            if rows.isEmpty { throw HearthError.threadNotFound(id: id) }
        }
    }

    // MARK: Messages

    /// The thread's messages, oldest first.
    public func messages(threadID: String) async throws -> [StoredMessage] {
        try await read { connection in
            // One statement, so the thread and its messages are read from one snapshot: a thread
            // without messages is one row of NULLs, no thread is no row.
            let rows = try await connection.query("""
                SELECT \(unescaped: SQL.messageColumns("m"))
                FROM (SELECT id FROM thread WHERE id = \(threadID)) AS t LEFT JOIN message AS m ON m.thread_id = t.id
                ORDER BY m.id
                """, logger: self.logger).collect()
            if rows.isEmpty { throw HearthError.threadNotFound(id: threadID) }
            return try rows.compactMap(Self.message(fromOptional:))
        }
    }

    /// Adds a message at the end of a thread and moves the thread to the top of the list.
    /// `role` must be "system", "user" or "assistant"; the statistics, when given, must not be
    /// negative (nor, for the speed, infinite or NaN).
    public func appendMessage(threadID: String, role: String, content: String,
                              completionTokens: Int? = nil, tokensPerSecond: Double? = nil,
                              reasoning: String? = nil) async throws -> StoredMessage {
        let role = try StoreValidation.role(role)
        try StoreValidation.statistics(completionTokens: completionTokens, tokensPerSecond: tokensPerSecond)
        return try await write { connection in
            // The thread's row lock first: appends to one thread then take their ids and times
            // one after the other and commit in that order, so a reader never sees a later
            // message without an earlier one, and the thread's updatedAt is its last message's.
            try await self.lockThread(connection, id: threadID)
            let rows = try await connection.query("""
                WITH now AS (SELECT \(unescaped: SQL.now) AS t),
                touched AS (
                    UPDATE thread SET updated_at = greatest(thread.updated_at, now.t), activity = nextval('thread_activity')
                    FROM now WHERE thread.id = \(threadID)
                )
                INSERT INTO message (thread_id, role, content, created_at, completion_tokens, tokens_per_second, reasoning)
                SELECT \(threadID), \(role), \(PostgresText.encode(content)), now.t, \(completionTokens), \(tokensPerSecond),
                       \(PostgresText.encode(reasoning))
                FROM now
                RETURNING \(unescaped: SQL.messageColumns(nil))
                """, logger: self.logger).collect()
            return try self.message(from: self.only(rows))
        }
    }

    /// For editing a question: replaces the text of one of the thread's user messages and
    /// deletes every message after it, so that the conversation goes on from the edited
    /// question. Returns the edited message, which keeps its id and time. One transaction: the
    /// later messages are never gone while the old text stays, nor the other way round.
    ///
    /// Throws `messageNotFound` when the thread has no message `messageID`, and
    /// `invalidArgument` when that message is not the user's: an answer is regenerated, not
    /// edited.
    public func editMessage(threadID: String, messageID: Int64, content: String) async throws -> StoredMessage {
        try await write { connection in
            // Locked as appendMessage locks it, so no message arrives while the later ones go.
            try await self.lockThread(connection, id: threadID)
            let rows = try await connection.query("""
                SELECT \(unescaped: SQL.messageColumns(nil)) FROM message WHERE thread_id = \(threadID) AND id = \(messageID)
                """, logger: self.logger).collect()
            guard let row = rows.first else { throw HearthError.messageNotFound(threadID: threadID, id: messageID) }
            var message = try self.message(from: row)
            guard message.role == "user" else {
                throw HearthError.invalidArgument(
                    "Message \(messageID) is the \(message.role)'s; only a user message can be edited. Regenerate an answer instead.")
            }
            _ = try await connection.query("DELETE FROM message WHERE thread_id = \(threadID) AND id > \(messageID)",
                                           logger: self.logger).collect()
            _ = try await connection.query("UPDATE message SET content = \(PostgresText.encode(content)) WHERE id = \(messageID)",
                                           logger: self.logger).collect()
            _ = try await connection.query("UPDATE thread SET \(unescaped: SQL.touch) WHERE id = \(threadID)",
                                           logger: self.logger).collect()
            message.content = content
            return message
        }
    }

    /// For Regenerate: deletes the thread's last message if it is the assistant's, and returns
    /// it; returns nil, deleting nothing, when the thread is empty or ends with another role.
    ///
    /// Only the very last message is considered: deleting an earlier answer would leave the
    /// conversation with a question answered by nothing in the middle.
    public func deleteLastAssistantMessage(threadID: String) async throws -> StoredMessage? {
        try await write { connection in
            // Locked as appendMessage locks it, so no message arrives between reading the last
            // one and deleting it.
            try await self.lockThread(connection, id: threadID)
            let rows = try await connection.query("""
                SELECT \(unescaped: SQL.messageColumns(nil)) FROM message WHERE thread_id = \(threadID) ORDER BY id DESC LIMIT 1
                """, logger: self.logger).collect()
            guard let row = rows.first else { return nil }
            let last = try self.message(from: row)
            guard last.role == "assistant" else { return nil }
            _ = try await connection.query("DELETE FROM message WHERE id = \(last.id)", logger: self.logger).collect()
            return last
        }
    }

    /// Deletes every message of every thread. The threads stay, with their names, settings and
    /// times, and the "Chat N" counter goes on from where it was.
    public func clearAll() async throws {
        try await write { connection in
            // TRUNCATE rather than DELETE: the table gets new, empty files, so the text is not
            // left behind in dead rows until a vacuum. CONTINUE IDENTITY keeps message ids
            // growing from where they were.
            _ = try await connection.query("TRUNCATE message CONTINUE IDENTITY", logger: self.logger).collect()
        }
    }

    // MARK: Internals

    /// SQL fragments the queries share.
    private enum SQL {
        /// The current time on the database server, cut to the millisecond.
        static let now = "date_trunc('milliseconds', clock_timestamp())"

        /// Assignments that move a thread to the top of the list and stamp its `updated_at`,
        /// which never goes back, even if the clock does.
        static let touch = "updated_at = greatest(updated_at, \(now)), activity = nextval('thread_activity')"

        /// Milliseconds since 1970 of a timestamp column, exactly (extract gives a numeric).
        static func milliseconds(_ column: String) -> String {
            "(extract(epoch FROM \(column)) * 1000)::int8"
        }

        /// The columns `thread(from:)` reads, in its order.
        static let threadColumns = threadColumns(nil)

        /// The columns `thread(from:)` reads, in its order, of the table called `table`.
        static func threadColumns(_ table: String?) -> String {
            let prefix = table.map { "\($0)." } ?? ""
            return ["id", "name", "model", "preset", "system_prompt", "created_at", "updated_at"]
                .map { $0.hasSuffix("_at") ? milliseconds(prefix + $0) : prefix + $0 }
                .joined(separator: ", ")
        }

        /// The columns `message(from:)` reads, in its order, of the table called `table`.
        static func messageColumns(_ table: String?) -> String {
            let prefix = table.map { "\($0)." } ?? ""
            return ["id", "thread_id", "role", "content", "created_at", "completion_tokens", "tokens_per_second", "reasoning"]
                .map { $0 == "created_at" ? milliseconds(prefix + $0) : prefix + $0 }
                .joined(separator: ", ")
        }
    }

    /// Inserts a thread, at the top of the list; a nil `name` takes the next "Chat N".
    private func insertThread(_ connection: PostgresConnection, name: String?, model: String?, preset: String?,
                              systemPrompt: String?) async throws -> ChatThread {
        let id = UUID().uuidString.lowercased()
        // CASE, not coalesce: nextval runs only when there is no name, so no number is spent.
        let rows = try await connection.query("""
            INSERT INTO thread (id, name, model, preset, system_prompt, created_at, updated_at, activity)
            SELECT \(id), CASE WHEN \(PostgresText.encode(name))::text IS NULL THEN 'Chat ' || nextval('thread_number')
                             ELSE \(PostgresText.encode(name))::text END,
                   \(PostgresText.encode(model)), \(PostgresText.encode(preset)),
                   \(PostgresText.encode(systemPrompt)), now.t, now.t, nextval('thread_activity')
            FROM (SELECT \(unescaped: SQL.now) AS t) AS now
            RETURNING \(unescaped: SQL.threadColumns)
            """, logger: logger).collect()
        return try Self.thread(from: only(rows))
    }

    /// The thread of the first seven columns of `row` (`SQL.threadColumns`).
    private static func thread(from row: PostgresRow) throws -> ChatThread {
        let (id, name, model, preset, systemPrompt, createdAt, updatedAt) =
            try row.decode((String, String, String?, String?, String?, Int64, Int64).self)
        return ChatThread(id: id, name: PostgresText.decode(name), model: PostgresText.decode(model),
                          preset: PostgresText.decode(preset), systemPrompt: PostgresText.decode(systemPrompt),
                          createdAt: StoredDate.date(milliseconds: createdAt), updatedAt: StoredDate.date(milliseconds: updatedAt))
    }

    private func message(from row: PostgresRow) throws -> StoredMessage {
        guard let message = try Self.message(fromOptional: row) else {
            throw HearthError.chatStoreDamaged(path: location, reason: "a message has no id, thread, role, text or time")
        }
        return message
    }

    /// nil for the row of NULLs that a thread without messages gives in `messages(threadID:)`.
    private static func message(fromOptional row: PostgresRow) throws -> StoredMessage? {
        let (id, threadID, role, content, createdAt, completionTokens, tokensPerSecond, reasoning) =
            try row.decode((Int64?, String?, String?, String?, Int64?, Int?, Double?, String?).self)
        guard let id, let threadID, let role, let content, let createdAt else { return nil }
        return StoredMessage(id: id, threadID: threadID, role: role, content: PostgresText.decode(content),
                             createdAt: StoredDate.date(milliseconds: createdAt), completionTokens: completionTokens,
                             tokensPerSecond: tokensPerSecond, reasoning: PostgresText.decode(reasoning))
    }

    private func only(_ rows: [PostgresRow]) throws -> PostgresRow {
        guard let row = rows.first else {
            throw HearthError.chatStoreFailed(path: location, reason: "the database returned no row for a row it had just written")
        }
        return row
    }

    /// The thread an UPDATE … RETURNING `SQL.threadColumns` changed; `threadNotFound` if it
    /// changed none.
    private func touched(id: String, _ rows: [PostgresRow]) throws -> ChatThread {
        guard let row = rows.first else { throw HearthError.threadNotFound(id: id) }
        return try Self.thread(from: row)
    }

    /// Locks the thread's row until the transaction ends; throws `threadNotFound` if there is
    /// no such thread.
    private func lockThread(_ connection: PostgresConnection, id: String) async throws {
        let rows = try await connection.query("SELECT id FROM thread WHERE id = \(id) FOR UPDATE", logger: logger).collect()
        if rows.isEmpty { throw HearthError.threadNotFound(id: id) }
    }

    /// Runs `updates` in one transaction. A task cancelled before it starts, or before it
    /// commits, writes nothing and gets `CancellationError`.
    private func write<T: Sendable>(_ updates: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try Task.checkCancellation()
        do {
            return try await client.withTransaction(logger: logger) { connection in
                let value = try await updates(connection)
                try Task.checkCancellation()
                return value
            }
        } catch {
            throw PostgresErrors.translate(error, url: url)
        }
    }

    private func read<T: Sendable>(_ value: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try Task.checkCancellation()
        do {
            return try await client.withConnection { connection in try await value(connection) }
        } catch {
            throw PostgresErrors.translate(error, url: url)
        }
    }
}

// MARK: Configuration

extension PostgresChatStore {
    /// The pool's configuration and the single connection's (used to migrate) for `url`.
    static func configurations(_ url: PostgresURL) throws
        -> (PostgresClient.Configuration, PostgresConnection.Configuration) {
        var client = PostgresClient.Configuration(host: url.host, port: url.port, username: url.user, password: url.password,
                                                  database: url.database, tls: .disable)
        var connection = PostgresConnection.Configuration(host: url.host, port: url.port, username: url.user,
                                                          password: url.password, database: url.database, tls: .disable)
        if url.tls != .disable {
            var tls = TLSConfiguration.makeClientConfiguration()
            switch url.tls {
            case .disable, .prefer, .require:
                // As libpq: these modes encrypt without checking who is at the other end.
                tls.certificateVerification = .none
            case .verifyCA:
                tls.certificateVerification = .noHostnameVerification
            case .verifyFull:
                tls.certificateVerification = .fullVerification
            }
            if let path = url.rootCertificatePath {
                guard FileManager.default.isReadableFile(atPath: path) else {
                    throw HearthError.invalidArgument(
                        "The sslrootcert file \(path) in the database URL \(url) cannot be read. Give the path of a PEM file of the certificate authorities to trust.")
                }
                tls.trustRoots = .file(path)
            }
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: tls)
            } catch {
                throw HearthError.invalidArgument(
                    "The TLS settings of the database URL \(url) cannot be used (\(error)). Check sslrootcert, or use sslmode=require.")
            }
            let enforced = url.tls != .prefer
            client.tls = enforced ? .require(tls) : .prefer(tls)
            connection.tls = enforced ? .require(context) : .prefer(context)
        }
        client.options.maximumConnections = maximumConnections
        // So that the database's administrator can tell Hearth's connections in pg_stat_activity.
        client.options.additionalStartupParameters = [("application_name", "hearth")]
        connection.options.additionalStartupParameters = [("application_name", "hearth")]
        return (client, connection)
    }
}
