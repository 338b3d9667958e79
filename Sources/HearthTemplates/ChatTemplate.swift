import HearthFormats

/// A model's chat template: the Jinja source that turns a conversation into prompt text.
public struct ChatTemplate: Sendable {
    /// The template's source text.
    public let source: String

    /// Keeps the template's source.
    public init(source: String) {
        self.source = source
    }
}
