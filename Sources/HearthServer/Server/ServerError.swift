import Foundation
import HTTPTypes
import Hearth

/// An error answered to a client: a status, a message that says what to do, and the fields
/// OpenAI's error schema carries. Ollama routes send only the message.
struct ServerError: Error, Sendable {
    var status: HTTPResponse.Status
    var message: String
    /// OpenAI's `type`: invalid_request_error, authentication_error, not_found_error, server_error.
    var type: String
    var code: String?
    var param: String?
    /// Seconds a client should wait before retrying (sent as `Retry-After`).
    var retryAfter: Int?

    static func badRequest(_ message: String, param: String? = nil, code: String? = nil) -> ServerError {
        ServerError(status: .badRequest, message: message, type: "invalid_request_error", code: code, param: param)
    }

    /// The role a message names, or a 400 for one Hearth does not take.
    static func role(_ name: String) throws -> ChatMessage.Role {
        guard let role = ChatMessage.Role(rawValue: name) else {
            throw badRequest("Message role '\(name)' is not supported; use system, user, assistant or tool.", param: "messages")
        }
        return role
    }

    static func modelNotFound(_ name: String) -> ServerError {
        ServerError(status: .notFound,
                    message: "The model '\(name)' is not available here. Pull it first (`hearth pull \(name)` or POST /api/pull), or start the server with --model.",
                    type: "invalid_request_error", code: "model_not_found", param: "model")
    }

    static func notFound(_ message: String) -> ServerError {
        ServerError(status: .notFound, message: message, type: "invalid_request_error", code: "not_found")
    }

    static func busy(model: String, slots: Int, waiting: Int) -> ServerError {
        ServerError(status: .serviceUnavailable,
                    message: "All \(slots) slots of '\(model)' are busy and \(waiting) requests are already waiting. Retry in a few seconds, or start the server with a larger --parallel or --queue.",
                    type: "server_error", code: "server_busy", retryAfter: 2)
    }

    static let unauthorized = ServerError(
        status: .unauthorized,
        message: "Missing or wrong API key. Send the server's key as `Authorization: Bearer KEY`.",
        type: "invalid_request_error", code: "invalid_api_key")

    static func tooLarge(limit: Int) -> ServerError {
        ServerError(status: .contentTooLarge,
                    message: "The request body is larger than the server's limit of \(limit) bytes. Send less, or start the server with a larger --max-body.",
                    type: "invalid_request_error", code: "request_too_large")
    }

    static func audioTooLarge(limit: Int) -> ServerError {
        ServerError(status: .contentTooLarge,
                    message: "The audio file is larger than this server's limit of \(limit) bytes (\(limit >> 20) MiB). Send a shorter recording, or a compressed one (ffmpeg -i in.wav -ac 1 -ar 16000 -b:a 32k out.mp3).",
                    type: "invalid_request_error", code: "file_too_large", param: "file")
    }

    /// The answer for any error a handler threw.
    static func from(_ error: any Error) -> ServerError {
        if let error = error as? ServerError { return error }
        if let error = error as? HearthError {
            switch error {
            case .modelNotFound(let name), .offlineNotCached(let name):
                return .modelNotFound(name)
            case .contextOverflow(let needed, let limit):
                return .badRequest(
                    "This model's context holds \(limit) tokens, but the request needs \(needed) (the prompt and at least one generated token). Shorten the messages or lower max_tokens.",
                    param: "messages", code: "context_length_exceeded")
            case .invalidArgument, .invalidTemplate, .unsupportedModel, .invalidAudioFile:
                return .badRequest(error.message)
            case .fileNotFound:
                return .notFound(error.message)
            case .insufficientMemory, .insufficientDiskSpace:
                return ServerError(status: .init(code: 507), message: error.message, type: "server_error", code: "insufficient_resources")
            case .hubRateLimited(let retryAfter):
                return ServerError(status: .tooManyRequests, message: error.message, type: "server_error", code: "rate_limited", retryAfter: retryAfter)
            case .hubNotFound, .threadNotFound, .messageNotFound:
                return .notFound(error.message)
            case .cacheNotWritable:
                return ServerError(status: .forbidden, message: error.message, type: "server_error", code: "cache_not_writable")
            case .hubAuthenticationRequired, .hubAccessDenied:
                return ServerError(status: .forbidden, message: error.message, type: "invalid_request_error", code: "hub_access")
            default:
                return ServerError(status: error.isRetryable ? .serviceUnavailable : .internalServerError,
                                   message: error.message, type: "server_error", code: nil)
            }
        }
        return ServerError(status: .internalServerError, message: "\(error)", type: "server_error")
    }
}
