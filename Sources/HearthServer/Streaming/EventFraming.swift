import Foundation
import HTTPTypes
import NIOCore

/// How a streamed response's events are written on the wire.
enum EventFraming: Sendable {
    /// Server-sent events: `data: JSON` and a blank line, after an `event:` line when the
    /// event is named (as Anthropic's and OpenAI's Responses streams name theirs).
    case serverSentEvents
    /// One JSON object a line, as Ollama streams.
    case ndjson

    /// The event `value` in this framing.
    func frame<T: Encodable>(_ value: T, event: String? = nil) throws -> ByteBuffer {
        var data = try JSONBody.encoder().encode(value)
        switch self {
        case .serverSentEvents:
            data = Data("\(event.map { "event: \($0)\n" } ?? "")data: ".utf8) + data + Data("\n\n".utf8)
        case .ndjson:
            data.append(UInt8(ascii: "\n"))
        }
        return ByteBuffer(data: data)
    }

    var contentType: String {
        switch self {
        case .serverSentEvents: "text/event-stream"
        case .ndjson: "application/x-ndjson"
        }
    }

    /// The headers of a streamed response: its content type, and no caching by proxies.
    var headers: HTTPFields {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        fields[.cacheControl] = "no-cache"
        return fields
    }
}
