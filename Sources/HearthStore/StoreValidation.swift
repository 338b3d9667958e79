import Foundation
import HearthCore

/// Checks on what callers hand the store, done before any write so that a bad value never
/// reaches the file and the error says which value was wrong.
package enum StoreValidation {
    /// The name trimmed of surrounding whitespace, if it is not empty and not too long.
    package static func threadName(_ name: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            throw HearthError.invalidArgument("A thread name cannot be empty or only spaces. Give it at least one visible character.")
        }
        let length = trimmed.count
        if length > ChatThread.maximumNameLength {
            throw HearthError.invalidArgument(
                "A thread name can be at most \(ChatThread.maximumNameLength) characters; this one has \(length). Shorten it.")
        }
        return trimmed
    }

    /// A model or preset name trimmed, with an empty one meaning "the server's default" (nil),
    /// which is what a cleared field in a form sends.
    package static func settingName(_ value: String?) -> String? {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return trimmed
    }

    package static func role(_ role: String) throws -> String {
        guard StoredMessage.roles.contains(role) else {
            throw HearthError.invalidArgument(
                "Unknown message role \"\(role)\": use \(StoredMessage.roles.joined(separator: ", ")).")
        }
        return role
    }

    /// SQLite stores NaN as NULL, so a non-finite speed would silently come back as nil.
    package static func statistics(completionTokens: Int?, tokensPerSecond: Double?) throws {
        if let completionTokens, completionTokens < 0 {
            throw HearthError.invalidArgument("completionTokens cannot be negative (got \(completionTokens)).")
        }
        if let tokensPerSecond, !tokensPerSecond.isFinite || tokensPerSecond < 0 {
            throw HearthError.invalidArgument("tokensPerSecond must be a finite number of at least 0 (got \(tokensPerSecond)).")
        }
    }

    /// A message to store, its role and statistics checked as `role` and `statistics` do.
    package static func message(_ message: NewMessage) throws -> NewMessage {
        var checked = message
        checked.role = try role(message.role)
        try statistics(completionTokens: message.completionTokens, tokensPerSecond: message.tokensPerSecond)
        return checked
    }

    /// A thread brought in from elsewhere: its name checked as `threadName` checks it (nil
    /// stays nil), its model and preset as `settingName`, and each message as `message`.
    package static func importedThread(name: String?, model: String?, preset: String?, messages: [NewMessage]) throws
        -> (name: String?, model: String?, preset: String?, messages: [NewMessage]) {
        (try name.map(threadName), settingName(model), settingName(preset), try messages.map(message))
    }
}
