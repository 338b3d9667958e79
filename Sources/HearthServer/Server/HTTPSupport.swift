import Foundation
import HTTPTypes
import Hearth
import Hummingbird
import NIOCore

extension Request {
    /// The body decoded as `T`, read up to `limit` bytes. An empty body, malformed JSON and
    /// values of the wrong type become 400s that name the problem; a larger body becomes a 413.
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        try await decodeJSONWithValue(type, limit: limit).decoded
    }

    /// As `decodeJSON`, and the body as a `JSONValue` too, which keeps its objects' key order
    /// (a schema's properties are generated in the order written, which `Decodable` loses).
    func decodeJSONWithValue<T: Decodable>(_ type: T.Type, limit: Int) async throws -> (decoded: T, value: JSONValue) {
        guard let body = try await decodeJSONIfPresent(type, limit: limit) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        return body
    }

    /// As `decodeJSONWithValue`, but nil for an empty body.
    func decodeJSONIfPresent<T: Decodable>(_ type: T.Type, limit: Int) async throws -> (decoded: T, value: JSONValue)? {
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw ServerError.tooLarge(limit: limit)
        }
        guard buffer.readableBytes > 0 else { return nil }
        let data = Data(buffer.readableBytesView)
        let decoded: T
        do {
            decoded = try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw ServerError.badRequest("The request body is not valid: \(Self.describe(error))")
        }
        return (decoded, (try? JSONValue(parsing: data)) ?? .null)
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "the body" : "'" + keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") + "'"
        }
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "it is not JSON (\(context.underlyingError.map { "\($0)" } ?? context.debugDescription))." }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required."
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) should be \(describe(type))."
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)) should be \(describe(type)), not null."
        @unknown default:
            return "\(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type, is UInt64.Type: return "an integer"
        case is Double.Type, is Float.Type: return "a number"
        case is Bool.Type: return "true or false"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "an array" : name.hasPrefix("Dictionary") ? "an object" : "a \(name)"
        }
    }
}

/// JSON as the server writes it.
enum JSONBody {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    static func bytes<T: Encodable>(_ value: T) throws -> ByteBuffer {
        ByteBuffer(data: try encoder().encode(value))
    }

    /// A JSON response with `status`.
    static func response<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: try bytes(value)))
    }
}

/// An optional field written as JSON null when it has no value, where synthesized encoding
/// would leave the key out: OpenAI's clients expect `finish_reason`, `logprobs` and the like
/// to be present.
@propertyWrapper
struct NullWhenAbsent<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// A value that clients send either alone or in an array (`stop`, `input`, `prompt`).
enum OneOrMany<Element: Decodable & Sendable>: Decodable, Sendable {
    case one(Element)
    case many([Element])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Element.self) {
            self = .one(value)
        } else {
            self = .many(try container.decode([Element].self))
        }
    }

    var all: [Element] {
        switch self {
        case .one(let value): [value]
        case .many(let values): values
        }
    }
}

/// Identifiers of answers (`chatcmpl-…`, `cmpl-…`, a rerank's id): 24 random hex digits.
enum ResponseID {
    static func random() -> String {
        String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24))
    }
}
