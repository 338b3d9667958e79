import Hearth
import Hummingbird
import NIOCore

/// One API's streamed answer as events: what it sends before the first chunk, for each chunk,
/// once the generation ends, on a failure, and to close the stream. A new wire format is one
/// of these; `AnswerStream` runs the generation for all of them.
protocol AnswerEncoder: Sendable {
    /// How the events are framed.
    var framing: EventFraming { get }
    /// Events before the first chunk (a role, an echoed prompt, a stored question).
    mutating func start() throws -> [ByteBuffer]
    /// Events for `chunk`; `answer` holds it and every chunk before it.
    mutating func chunk(_ chunk: GenerationChunk, answer: Answer) throws -> [ByteBuffer]
    /// Events once the generation has ended, the whole answer in hand; nil when the answer was
    /// stopped before its end and the stream is left without its closing.
    mutating func finish(_ answer: Answer) async throws -> [ByteBuffer]?
    /// The event that reports a failure after the stream began.
    mutating func failure(_ error: ServerError) throws -> [ByteBuffer]
    /// Bytes after everything else, a failure included (OpenAI's `data: [DONE]`).
    mutating func end() -> [ByteBuffer]
}

extension AnswerEncoder {
    mutating func start() throws -> [ByteBuffer] { [] }
    mutating func finish(_ answer: Answer) async throws -> [ByteBuffer]? { [] }
    mutating func end() -> [ByteBuffer] { [] }
}

/// The one path of every streamed answer: a running generation's chunks through an API's
/// encoder to the client.
enum AnswerStream {
    /// A response that streams `generation` as `encoder` writes it. However the body ends
    /// (written, failed, or the client gone), the generation stops and frees its slot; usage
    /// comes to the encoder with the last chunk's statistics.
    static func response(_ generation: RunningGeneration, encoder: some AnswerEncoder) -> Response {
        Response(status: .ok, headers: encoder.framing.headers, body: ResponseBody { writer in
            var encoder = encoder
            defer { generation.cancel() }
            try await writer.write(contentsOf: encoder.start())
            var answer = Answer()
            do {
                while let chunk = try await generation.next() {
                    answer.append(chunk)
                    try await writer.write(contentsOf: encoder.chunk(chunk, answer: answer))
                }
                guard let closing = try await encoder.finish(answer) else { return }
                try await writer.write(contentsOf: closing)
            } catch let error where !(error is CancellationError) {
                // A client that left makes this write fail too, which ends the body.
                try await writer.write(contentsOf: encoder.failure(ServerError.from(error)))
            }
            try await writer.write(contentsOf: encoder.end())
            try await writer.finish(nil)
        })
    }
}
