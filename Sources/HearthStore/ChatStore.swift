import Foundation

/// Chat threads and their messages, wherever they are kept: `SQLiteChatStore` (a file, the
/// default) or `PostgresChatStore` (a PostgreSQL database that several servers share).
///
/// Every engine keeps the same promises, which the store tests check on each:
/// - every write is one transaction: it happens whole or not at all;
/// - thread ids are lowercased UUIDs; a new thread is "Chat N", N greater than every number
///   handed out before from this database (never twice, not after deletes or `clearAll`;
///   PostgreSQL skips the number of a creation that failed or was cancelled);
/// - times are whole milliseconds, so a value returned by a write equals the same value read
///   back; `updatedAt` never goes back;
/// - `threads()` lists the most recently changed thread first, whatever the clock says;
///   `messages(threadID:)` lists oldest first; message ids grow and are never reused;
/// - text comes back byte for byte, NUL characters included;
/// - every error is a `HearthError`, except `CancellationError` when the calling task is
///   cancelled, and then the call has written nothing.
public protocol ChatStore: AnyObject, Sendable {
    /// Where the chats are, as errors and logs name it: a file path, or a database URL without
    /// its password.
    var location: String { get }

    /// A new, empty thread named "Chat N". An empty or blank `model` or `preset` means the
    /// server's default (nil).
    func createThread(model: String?, preset: String?, systemPrompt: String?) async throws -> ChatThread

    /// Every thread, the most recently updated first.
    func threads() async throws -> [ChatThread]

    /// The threads whose name, or the text of any of whose messages, contains `text`, ignoring
    /// case and diacritics (as `TextSearch.contains` compares); the most recently updated
    /// first. Text of only spaces matches every thread, as an empty search box shows them all.
    func threads(matching text: String) async throws -> [ChatThread]

    /// A new thread holding `messages`, in their order, for a conversation brought in from
    /// elsewhere (an exported thread). The thread and its messages are written in one
    /// transaction: a refused message leaves no thread behind. A nil `name` means "Chat N";
    /// a given one is checked as `renameThread` checks it. Roles and statistics are checked as
    /// `appendMessage` checks them.
    func importThread(name: String?, model: String?, preset: String?, systemPrompt: String?,
                      messages: [NewMessage]) async throws -> ChatThread

    /// The thread with this id, or nil if there is none.
    func thread(id: String) async throws -> ChatThread?

    /// Renames a thread. The name is trimmed; it must not be empty and may have at most
    /// `ChatThread.maximumNameLength` characters.
    func renameThread(id: String, to name: String) async throws -> ChatThread

    /// Replaces a thread's settings; nil (or an empty model or preset name) means the server's
    /// default.
    func updateSettings(id: String, model: String?, preset: String?, systemPrompt: String?) async throws -> ChatThread

    /// Deletes a thread and all its messages. Its number is not handed out again.
    func deleteThread(id: String) async throws

    /// The thread's messages, oldest first.
    func messages(threadID: String) async throws -> [StoredMessage]

    /// Adds a message at the end of a thread and moves the thread to the top of the list.
    /// `role` must be "system", "user" or "assistant"; the statistics, when given, must not be
    /// negative (nor, for the speed, infinite or NaN).
    func appendMessage(threadID: String, role: String, content: String, completionTokens: Int?, tokensPerSecond: Double?,
                       reasoning: String?) async throws -> StoredMessage

    /// For editing a question: replaces the text of one of the thread's user messages and
    /// deletes every message after it, in one transaction. Returns the edited message, which
    /// keeps its id and time. Throws `threadNotFound`, `messageNotFound` when the thread has no
    /// message `messageID`, and `invalidArgument` when that message is not the user's.
    func editMessage(threadID: String, messageID: Int64, content: String) async throws -> StoredMessage

    /// For Regenerate: deletes the thread's last message if it is the assistant's, and returns
    /// it; returns nil, deleting nothing, when the thread is empty or ends with another role.
    func deleteLastAssistantMessage(threadID: String) async throws -> StoredMessage?

    /// Deletes every message of every thread. The threads stay, with their names, settings and
    /// times, and the "Chat N" counter goes on from where it was.
    func clearAll() async throws

    /// Lets go of the store's connections: PostgreSQL's pool stops, and calls after this one
    /// fail with `chatStoreFailed`; SQLite has nothing to do (it closes the file when the store
    /// is released). Safe to call more than once.
    func close() async
}

extension ChatStore {
    /// A new, empty thread named "Chat N", with the server's defaults unless given.
    public func createThread(model: String? = nil, preset: String? = nil, systemPrompt: String? = nil) async throws -> ChatThread {
        try await createThread(model: model, preset: preset, systemPrompt: systemPrompt)
    }

    /// A new thread holding `messages`, with the server's defaults unless given.
    public func importThread(name: String?, model: String? = nil, preset: String? = nil, systemPrompt: String? = nil,
                             messages: [NewMessage]) async throws -> ChatThread {
        try await importThread(name: name, model: model, preset: preset, systemPrompt: systemPrompt, messages: messages)
    }

    /// Adds a message at the end of a thread, without statistics unless given.
    public func appendMessage(threadID: String, role: String, content: String, completionTokens: Int? = nil,
                              tokensPerSecond: Double? = nil, reasoning: String? = nil) async throws -> StoredMessage {
        try await appendMessage(threadID: threadID, role: role, content: content, completionTokens: completionTokens,
                                tokensPerSecond: tokensPerSecond, reasoning: reasoning)
    }
}

/// A message for `ChatStore.importThread`, not yet stored.
public struct NewMessage: Sendable, Equatable {
    /// "system", "user" or "assistant".
    public var role: String
    public var content: String
    public var completionTokens: Int?
    public var tokensPerSecond: Double?
    public var reasoning: String?

    public init(role: String, content: String, completionTokens: Int? = nil, tokensPerSecond: Double? = nil,
                reasoning: String? = nil) {
        self.role = role
        self.content = content
        self.completionTokens = completionTokens
        self.tokensPerSecond = tokensPerSecond
        self.reasoning = reasoning
    }
}
