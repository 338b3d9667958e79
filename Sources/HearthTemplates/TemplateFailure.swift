import HearthCore

/// A position in a template's source, 1-based, counted in Unicode scalars as Python counts characters.
struct SourceLocation: Sendable, Equatable {
    var line: Int
    var column: Int
}

/// Why parsing or rendering stopped, and where. It becomes ``HearthError/invalidTemplate(line:column:reason:)``
/// at the public API.
struct TemplateFailure: Error {
    var reason: String
    var location: SourceLocation?

    init(_ reason: String, at location: SourceLocation? = nil) {
        self.reason = reason
        self.location = location
    }

    var hearthError: HearthError {
        .invalidTemplate(line: location?.line ?? 1, column: location?.column ?? 1, reason: reason)
    }
}
