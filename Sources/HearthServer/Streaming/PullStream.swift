import Hearth
import Hummingbird

/// /api/pull's progress as NDJSON lines, as Ollama writes them.
enum PullStream {
    /// One progress line.
    struct Line: Encodable, Sendable {
        var status: String
        var digest: String?
        var total: Int?
        var completed: Int?

        init(status: String, digest: String? = nil, total: Int? = nil, completed: Int? = nil) {
            self.status = status
            self.digest = digest
            self.total = total
            self.completed = completed
        }

        init(_ event: DownloadProgress) {
            switch event.phase {
            case .resolving:
                self.init(status: "pulling manifest")
            case .downloading:
                guard let file = event.file else {
                    self.init(status: "pulling manifest")
                    return
                }
                self.init(status: "pulling \(file)", digest: file, total: event.totalBytes, completed: event.completedBytes)
            case .verifying:
                self.init(status: "verifying sha256 digest", total: event.totalBytes, completed: event.completedBytes)
            case .done:
                self.init(status: "success")
            }
        }
    }

    /// The progress streamed. It comes many times a second; a client needs a few lines a
    /// second, and the newest line of each phase before the next phase begins.
    static func response(_ progress: AsyncThrowingStream<DownloadProgress, any Error>) -> Response {
        let framing = EventFraming.ndjson
        return Response(status: .ok, headers: framing.headers, body: ResponseBody { writer in
            var held: Line?
            var sentStatus = ""
            var lastSent = ContinuousClock.now
            do {
                for try await event in progress {
                    let entry = Line(event)
                    let now = ContinuousClock.now
                    if entry.status != sentStatus {
                        if let held { try await writer.write(framing.frame(held)) }
                        try await writer.write(framing.frame(entry))
                        (sentStatus, lastSent, held) = (entry.status, now, nil)
                    } else if now - lastSent >= .milliseconds(100) {
                        try await writer.write(framing.frame(entry))
                        (lastSent, held) = (now, nil)
                    } else {
                        held = entry
                    }
                }
                if let held { try await writer.write(framing.frame(held)) }
            } catch {
                try await writer.write(framing.frame(OllamaErrorBody(error: ServerError.from(error).message)))
            }
            try await writer.finish(nil)
        })
    }
}
