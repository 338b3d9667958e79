import Foundation

/// One message of a thread, as stored.
public struct StoredMessage: Codable, Sendable, Equatable, Identifiable {
    /// Increases with every message added to the file and is never reused, even after deletes,
    /// so a client holding an old id can never confuse it with a newer message.
    public var id: Int64
    /// The thread the message belongs to.
    public var threadID: String
    /// "system", "user" or "assistant".
    public var role: String
    /// The text.
    public var content: String
    /// When the message was added (whole milliseconds).
    public var createdAt: Date
    /// For assistant messages: how many tokens the answer took.
    public var completionTokens: Int?
    /// For assistant messages: how fast they came.
    public var tokensPerSecond: Double?
    /// For a reasoning model's answer: the thoughts before it.
    public var reasoning: String?

    /// The roles a message may have.
    public static let roles: [String] = ["system", "user", "assistant"]

    /// A message with the given values; the store makes these, this is for callers' own tests.
    public init(id: Int64, threadID: String, role: String, content: String, createdAt: Date,
                completionTokens: Int? = nil, tokensPerSecond: Double? = nil, reasoning: String? = nil) {
        self.id = id
        self.threadID = threadID
        self.role = role
        self.content = content
        self.createdAt = createdAt
        self.completionTokens = completionTokens
        self.tokensPerSecond = tokensPerSecond
        self.reasoning = reasoning
    }
}
