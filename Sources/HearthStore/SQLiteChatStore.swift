import Foundation
import HearthCore
internal import GRDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Chat threads and their messages, kept in one SQLite file: the `ChatStore` a single server
/// uses by default.
///
/// Every write is one transaction: a process killed part way leaves the file as it was before
/// the write or after it, never between. Many tasks (and several processes) may use one file at
/// once; writes take turns, reads run beside them. Every error thrown is a `HearthError`, except
/// `CancellationError` when the calling task is cancelled: the call then has written nothing
/// (a write already under way is interrupted and rolled back).
///
/// ```swift
/// let store = try SQLiteChatStore(path: SQLiteChatStore.defaultPath())
/// let thread = try await store.createThread(preset: "precise")
/// _ = try await store.appendMessage(threadID: thread.id, role: "user", content: "Hello")
/// ```
public final class SQLiteChatStore: ChatStore {
    /// The database file.
    public let path: String
    /// The database file, as errors name it.
    public var location: String { path }
    private let pool: DatabasePool

    /// How long a write waits for another process that holds the file's write lock.
    private static let lockTimeout: TimeInterval = 10

    /// Opens the database at `path`, creating it and its parent directories if missing, and
    /// brings its tables up to date.
    ///
    /// Throws `HearthError.chatStoreDamaged` for a file that is not a SQLite database (or is
    /// another program's), `HearthError.chatStoreTooNew` for one written by a newer Hearth, and
    /// `HearthError.chatStoreFailed` when the directory or file cannot be created or opened.
    public init(path: String) throws {
        self.path = path
        pool = try Self.openPool(path: path)
    }

    /// Where the chats live unless told otherwise: `$HEARTH_DATA_DIR/hearth.sqlite`, else
    /// `$XDG_DATA_HOME/hearth/hearth.sqlite`, else `~/.local/share/hearth/hearth.sqlite`.
    /// Empty variables count as unset, and so does a relative `XDG_DATA_HOME`, as the XDG base
    /// directory specification asks.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        func setting(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else { return nil }
            return value
        }
        func inside(_ directory: String, _ components: String...) -> String {
            components.reduce(URL(fileURLWithPath: directory, isDirectory: true)) { $0.appendingPathComponent($1) }.path
        }
        if let directory = setting("HEARTH_DATA_DIR") {
            return inside(directory, "hearth.sqlite")
        }
        if let dataHome = setting("XDG_DATA_HOME"), dataHome.hasPrefix("/") {
            return inside(dataHome, "hearth", "hearth.sqlite")
        }
        let home = setting("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
        return inside(home, ".local", "share", "hearth", "hearth.sqlite")
    }

    // MARK: Threads

    /// A new, empty thread named "Chat N", N one more than the last number ever handed out.
    /// An empty or blank `model` or `preset` means the server's default (nil).
    public func createThread(model: String? = nil, preset: String? = nil, systemPrompt: String? = nil) async throws -> ChatThread {
        let model = StoreValidation.settingName(model)
        let preset = StoreValidation.settingName(preset)
        return try await write { db in
            try self.insertThread(db, name: nil, model: model, preset: preset, systemPrompt: systemPrompt)
        }
    }

    /// A new thread holding `messages`, in their order, for a conversation brought in from
    /// elsewhere (an exported thread). The thread and its messages are written in one
    /// transaction: a refused message leaves no thread behind. A nil `name` means "Chat N";
    /// a given one is checked as `renameThread` checks it. Roles and statistics are checked as
    /// `appendMessage` checks them.
    public func importThread(name: String?, model: String? = nil, preset: String? = nil, systemPrompt: String? = nil,
                             messages: [NewMessage]) async throws -> ChatThread {
        let checked = try StoreValidation.importedThread(name: name, model: model, preset: preset, messages: messages)
        return try await write { [checked] db in
            let thread = try self.insertThread(db, name: checked.name, model: checked.model, preset: checked.preset,
                                              systemPrompt: systemPrompt)
            for message in checked.messages {
                _ = try Self.insertMessage(db, threadID: thread.id, message, at: thread.createdAt)
            }
            return thread
        }
    }

    /// Every thread, the most recently updated first.
    public func threads() async throws -> [ChatThread] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT \(ChatThread.columns) FROM thread ORDER BY activity DESC")
                .map(ChatThread.init(row:))
        }
    }

    /// The threads whose name, or the text of any of whose messages, contains `text`, ignoring
    /// case and diacritics; the most recently updated first. Text of only spaces matches every
    /// thread, as an empty search box shows them all.
    public func threads(matching text: String) async throws -> [ChatThread] {
        let needle = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if needle.isEmpty { return try await threads() }
        let contains = TextSearch.functionName
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(ChatThread.columns) FROM thread
                    WHERE \(contains)(CAST(thread.name AS BLOB), ?)
                       OR EXISTS (SELECT 1 FROM message
                                  WHERE message.threadID = thread.id AND \(contains)(CAST(message.content AS BLOB), ?))
                    ORDER BY activity DESC
                    """,
                arguments: [Data(needle.utf8), Data(needle.utf8)])
                .map(ChatThread.init(row:))
        }
    }

    /// The thread with this id, or nil if there is none.
    public func thread(id: String) async throws -> ChatThread? {
        try await read { db in try Self.fetchThread(db, id: id) }
    }

    /// Renames a thread. The name is trimmed; it must not be empty and may have at most
    /// `ChatThread.maximumNameLength` characters.
    public func renameThread(id: String, to name: String) async throws -> ChatThread {
        let name = try StoreValidation.threadName(name)
        return try await write { db in
            try Self.touch(db, id: id, setting: "name = \(StoredText.placeholder)", arguments: [StoredText.bind(name)])
            return try Self.requireThread(db, id: id)
        }
    }

    /// Replaces a thread's settings; nil (or an empty model or preset name) means the server's
    /// default.
    public func updateSettings(id: String, model: String?, preset: String?, systemPrompt: String?) async throws -> ChatThread {
        let model = StoreValidation.settingName(model)
        let preset = StoreValidation.settingName(preset)
        return try await write { db in
            let text = StoredText.placeholder
            try Self.touch(db, id: id, setting: "model = \(text), preset = \(text), systemPrompt = \(text)",
                           arguments: [StoredText.bind(model), StoredText.bind(preset), StoredText.bind(systemPrompt)])
            return try Self.requireThread(db, id: id)
        }
    }

    /// Deletes a thread and all its messages. Its number is not handed out again.
    public func deleteThread(id: String) async throws {
        try await write { db in
            // The foreign key's ON DELETE CASCADE removes the messages in the same transaction.
            try db.execute(sql: "DELETE FROM thread WHERE id = ?", arguments: [id])
            if db.changesCount == 0 { throw HearthError.threadNotFound(id: id) }
        }
    }

    // MARK: Messages

    /// The thread's messages, oldest first.
    public func messages(threadID: String) async throws -> [StoredMessage] {
        try await read { db in
            _ = try Self.requireThread(db, id: threadID)
            return try Row.fetchAll(db, sql: "SELECT \(StoredMessage.columns) FROM message WHERE threadID = ? ORDER BY id",
                                    arguments: [threadID])
                .map(StoredMessage.init(row:))
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
        let message = NewMessage(role: role, content: content, completionTokens: completionTokens, tokensPerSecond: tokensPerSecond,
                                 reasoning: reasoning)
        return try await write { db in
            let now = StoredDate.now()
            try Self.touch(db, id: threadID, at: now)
            return try Self.insertMessage(db, threadID: threadID, message, at: now)
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
        try await write { db in
            _ = try Self.requireThread(db, id: threadID)
            guard let row = try Row.fetchOne(
                db, sql: "SELECT \(StoredMessage.columns) FROM message WHERE threadID = ? AND id = ?",
                arguments: [threadID, messageID])
            else { throw HearthError.messageNotFound(threadID: threadID, id: messageID) }
            var message = try StoredMessage(row: row)
            guard message.role == "user" else {
                throw HearthError.invalidArgument(
                    "Message \(messageID) is the \(message.role)'s; only a user message can be edited. Regenerate an answer instead.")
            }
            try db.execute(sql: "DELETE FROM message WHERE threadID = ? AND id > ?", arguments: [threadID, messageID])
            try db.execute(sql: "UPDATE message SET content = \(StoredText.placeholder) WHERE id = ?",
                           arguments: [StoredText.bind(content), messageID])
            try Self.touch(db, id: threadID)
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
        try await write { db in
            _ = try Self.requireThread(db, id: threadID)
            guard let row = try Row.fetchOne(
                db, sql: "SELECT \(StoredMessage.columns) FROM message WHERE threadID = ? ORDER BY id DESC LIMIT 1",
                arguments: [threadID])
            else { return nil }
            let last = try StoredMessage(row: row)
            guard last.role == "assistant" else { return nil }
            try db.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [last.id])
            return last
        }
    }

    /// Deletes every message of every thread. The threads stay, with their names, settings and
    /// times, and the "Chat N" counter goes on from where it was.
    public func clearAll() async throws {
        try await write { db in try db.execute(sql: "DELETE FROM message") }
        // secure_delete has zeroed the freed pages; the old page images still sit in the
        // write-ahead log until it is checkpointed and truncated, so do that now. It is best
        // effort: a reader in another process can keep it from finishing, and the clear itself
        // has already committed.
        _ = try? await pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    /// Nothing to do: SQLite closes the file when the last reference to the store goes.
    public func close() async {}

    // MARK: Internals

    /// Inserts a thread, at the top of the list; a nil `name` takes the next "Chat N".
    private func insertThread(_ db: Database, name: String?, model: String?, preset: String?, systemPrompt: String?) throws -> ChatThread {
        let name = try name ?? {
            try db.execute(sql: "UPDATE counter SET value = value + 1 WHERE name = ?", arguments: [StoreSchema.threadNumberCounter])
            guard let number = try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = ?",
                                                  arguments: [StoreSchema.threadNumberCounter]) else {
                throw HearthError.chatStoreDamaged(path: self.path, reason: "its thread counter row is missing")
            }
            return "Chat \(number)"
        }()
        let now = StoredDate.now()
        let thread = ChatThread(id: UUID().uuidString.lowercased(), name: name, model: model, preset: preset,
                                systemPrompt: systemPrompt, createdAt: now, updatedAt: now)
        let milliseconds = StoredDate.milliseconds(now)
        let text = StoredText.placeholder
        try db.execute(
            sql: """
                INSERT INTO thread (id, name, model, preset, systemPrompt, createdAt, updatedAt, activity)
                VALUES (?, \(text), \(text), \(text), \(text), ?, ?, \(Self.nextActivity))
                """,
            arguments: [thread.id, StoredText.bind(thread.name), StoredText.bind(model), StoredText.bind(preset),
                        StoredText.bind(systemPrompt), milliseconds, milliseconds])
        return thread
    }

    /// Inserts a message (already checked) at the end of a thread, without touching the thread.
    private static func insertMessage(_ db: Database, threadID: String, _ message: NewMessage, at now: Date) throws -> StoredMessage {
        let text = StoredText.placeholder
        try db.execute(
            sql: """
                INSERT INTO message (threadID, role, content, createdAt, completionTokens, tokensPerSecond, reasoning)
                VALUES (?, ?, \(text), ?, ?, ?, \(text))
                """,
            arguments: [threadID, message.role, StoredText.bind(message.content), StoredDate.milliseconds(now), message.completionTokens,
                        message.tokensPerSecond, StoredText.bind(message.reasoning)])
        return StoredMessage(id: db.lastInsertedRowID, threadID: threadID, role: message.role, content: message.content, createdAt: now,
                             completionTokens: message.completionTokens, tokensPerSecond: message.tokensPerSecond,
                             reasoning: message.reasoning)
    }

    /// SQL for the next value of `thread.activity`, which orders the thread list.
    private static let nextActivity = "(SELECT coalesce(max(activity), 0) + 1 FROM thread)"

    /// Moves a thread to the top of the list, stamping `updatedAt` and applying `setting` (SQL
    /// assignments) in the same statement; throws `threadNotFound` if there is no such thread.
    /// `updatedAt` never goes back, even if the clock does.
    private static func touch(_ db: Database, id: String, at now: Date = StoredDate.now(),
                              setting: String? = nil, arguments: StatementArguments = []) throws {
        let assignments = [setting, "updatedAt = max(updatedAt, ?)", "activity = \(nextActivity)"].compactMap { $0 }
        try db.execute(sql: "UPDATE thread SET \(assignments.joined(separator: ", ")) WHERE id = ?",
                       arguments: arguments + [StoredDate.milliseconds(now), id])
        if db.changesCount == 0 { throw HearthError.threadNotFound(id: id) }
    }

    private static func fetchThread(_ db: Database, id: String) throws -> ChatThread? {
        try Row.fetchOne(db, sql: "SELECT \(ChatThread.columns) FROM thread WHERE id = ?", arguments: [id])
            .map(ChatThread.init(row:))
    }

    private static func requireThread(_ db: Database, id: String) throws -> ChatThread {
        guard let thread = try fetchThread(db, id: id) else { throw HearthError.threadNotFound(id: id) }
        return thread
    }

    private func write<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.write(updates)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(value)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }
}

// MARK: Opening

extension SQLiteChatStore {
    private static func openPool(path: String) throws -> DatabasePool {
        // SQLite reads "" as "a private temporary database" and ":memory:" as one in memory:
        // either would lose every chat at exit without a word.
        if path.isEmpty || path == ":memory:" {
            throw HearthError.invalidArgument(
                "The chat database path \"\(path)\" is not a file path. Give the path of a file (see SQLiteChatStore.defaultPath).")
        }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            // 0700, as the XDG specification asks of the data directory: chats are private.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw HearthError.chatStoreFailed(path: path, reason: "the directory \(directory) cannot be created (\(error.localizedDescription))")
        }
        createPrivately(path)

        var configuration = Configuration()
        configuration.label = "Hearth chat store"
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(lockTimeout)
        configuration.prepareDatabase { db in
            // FULL: a message the user has seen saved should survive a power cut too, not only a
            // killed process; one fsync per message costs nothing next to generating it.
            // secure_delete: deleted chats are overwritten, not left in free pages.
            try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA secure_delete = ON")
            db.add(function: TextSearch.function)
        }
        do {
            let pool = try DatabasePool(path: path, configuration: configuration)
            try pool.write { db in try StoreSchema.checkOwnership(db, path: path) }
            try StoreSchema.migrator.migrate(pool)
            return pool
        } catch {
            throw storeError(error, path: path)
        }
    }

    /// Creates the file readable by its owner only, before SQLite creates it with the umask's
    /// permissions (its -wal and -shm files copy the main file's). O_EXCL leaves an existing
    /// file alone, even one another process creates at the same moment.
    private static func createPrivately(_ path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        // Qualified: inside the store, a bare close is the store's own close().
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #elseif canImport(Darwin)
        Darwin.close(descriptor)
        #endif
    }

    /// The `HearthError` for an error from GRDB or SQLite.
    static func storeError(_ error: any Error, path: String) -> any Error {
        switch error {
        case is HearthError, is CancellationError:
            return error
        case let error as DatabaseError:
            let detail = error.message ?? "SQLite error \(error.resultCode.rawValue)"
            switch error.resultCode {
            case .SQLITE_INTERRUPT:
                // GRDB interrupts a statement only when the task running it is cancelled.
                return CancellationError()
            case .SQLITE_NOTADB:
                return HearthError.chatStoreDamaged(path: path, reason: "it is not a SQLite database (\(detail))")
            case .SQLITE_CORRUPT:
                return HearthError.chatStoreDamaged(path: path, reason: "the file is damaged (\(detail))")
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return HearthError.chatStoreFailed(
                    path: path, reason: "another process kept it locked for over \(Int(lockTimeout)) seconds (\(detail))")
            default:
                return HearthError.chatStoreFailed(path: path, reason: detail)
            }
        case is RowDecodingError:
            return HearthError.chatStoreDamaged(path: path, reason: "a stored value is not of the expected type (\(error))")
        default:
            return HearthError.chatStoreFailed(path: path, reason: String(describing: error))
        }
    }
}
