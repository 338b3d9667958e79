import Foundation

/// A conversation: its name, its settings and its times. Its messages are read separately
/// (`ChatStore.messages(threadID:)`), so listing threads stays cheap however long they are.
public struct ChatThread: Codable, Sendable, Equatable, Identifiable {
    /// A lowercased UUID string.
    public var id: String
    /// "Chat 1", "Chat 2", … until renamed; the number comes from a counter that never goes back.
    public var name: String
    /// The model to answer with; nil means the server's default.
    public var model: String?
    /// The name of a sampling style preset (creative, balanced, precise, code…); nil means the
    /// server's default. The store keeps the name as given: the server knows which exist.
    public var preset: String?
    /// The system prompt; nil means the server's default. An empty string is kept, and means
    /// "no system prompt".
    public var systemPrompt: String?
    /// When the thread was created (whole milliseconds, so it equals itself after a reload).
    public var createdAt: Date
    /// When a message was last added or the name or settings last changed.
    public var updatedAt: Date

    /// The longest name `renameThread` accepts, in characters as a reader counts them.
    public static let maximumNameLength = 200

    /// A thread with the given values; the store makes these, this is for callers' own tests.
    public init(id: String, name: String, model: String? = nil, preset: String? = nil, systemPrompt: String? = nil,
                createdAt: Date, updatedAt: Date) {
        self.id = id
        self.name = name
        self.model = model
        self.preset = preset
        self.systemPrompt = systemPrompt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
