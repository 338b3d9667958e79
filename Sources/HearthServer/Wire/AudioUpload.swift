import Foundation
import HTTPTypes
import Hummingbird
import MultipartKit
import NIOCore

/// A multipart/form-data request with one file: its text fields, and the file written to a
/// temporary file while the body arrives, so that a large upload never sits in memory whole.
/// The file is removed when the upload is released, however the request ends.
final class AudioUpload {
    /// Text fields by name, each value in the order sent (`timestamp_granularities[]` repeats).
    private(set) var fields: [String: [String]] = [:]
    /// The temporary file holding the part named `file`, nil when the form had none.
    private(set) var file: URL?
    /// The name the client gave the file.
    private(set) var filename: String?
    /// Bytes of the file.
    private(set) var fileBytes = 0

    /// The largest text field: Whisper's prompt holds at most 224 tokens, so 64 KiB is room
    /// to spare, and a client cannot make the server buffer megabytes outside the file.
    static let fieldLimit = 64 << 10

    private init() {}

    deinit {
        if let file { try? FileManager.default.removeItem(at: file) }
    }

    /// The first value of the field `name`, nil when absent or empty.
    func field(_ name: String) -> String? {
        guard let value = fields[name]?.first, !value.isEmpty else { return nil }
        return value
    }

    /// Every value sent for `name` (`name` and `name[]`, as clients spell arrays both ways).
    func values(_ name: String) -> [String] {
        (fields[name] ?? []) + (fields[name + "[]"] ?? [])
    }

    /// Reads the body of `request` into a new upload: the part named `file` goes to a file in
    /// `directory`, at most `fileLimit` bytes of it; other parts are text fields. Throws 413
    /// for a larger file (before reading when Content-Length already says so) and 400 for a
    /// body that is not multipart/form-data or ends before its closing boundary.
    static func read(_ request: Request, into directory: URL, fileLimit: Int) async throws -> AudioUpload {
        let boundary = try Self.boundary(request.headers[.contentType])
        // The file plus the other fields and the multipart framing around them.
        let bodyLimit = fileLimit + 4 * fieldLimit
        if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit {
            throw ServerError.audioTooLarge(limit: fileLimit)
        }
        let upload = AudioUpload()
        let reader = FormReader(upload: upload, directory: directory, fileLimit: fileLimit)
        let parser = MultipartParser(boundary: boundary)
        parser.onHeader = { name, value in reader.header(name, value) }
        parser.onBody = { bytes in reader.body(&bytes) }
        parser.onPartComplete = { reader.partComplete() }
        var received = 0
        do {
            for try await buffer in request.body {
                received += buffer.readableBytes
                if received > bodyLimit { throw ServerError.audioTooLarge(limit: fileLimit) }
                do {
                    try parser.execute(buffer)
                } catch {
                    throw ServerError.badRequest("The multipart/form-data body is malformed; send the audio the way OpenAI's clients and curl -F do.",
                                                 param: "file")
                }
                if let failure = reader.failure { throw failure }
            }
            try reader.finish()
        } catch {
            reader.abandon()
            throw error
        }
        return upload
    }

    /// The boundary of a multipart/form-data Content-Type, or a 400 that says how to send one.
    static func boundary(_ contentType: String?) throws -> String {
        let howTo = "Send the audio as multipart/form-data with a `file` field, as OpenAI's clients do (curl -F file=@speech.wav -F model=whisper-1 …)."
        guard let contentType else { throw ServerError.badRequest("The request has no Content-Type. " + howTo, param: "file") }
        let parameters = HeaderParameters(contentType)
        guard parameters.value.lowercased() == "multipart/form-data" else {
            throw ServerError.badRequest("The request is \(parameters.value), not multipart/form-data. " + howTo, param: "file")
        }
        // RFC 2046 allows 1 to 70 characters; the parser needs at least one.
        guard let boundary = parameters["boundary"], (1...70).contains(boundary.count) else {
            throw ServerError.badRequest("The multipart/form-data Content-Type has no valid boundary. " + howTo, param: "file")
        }
        return boundary
    }

    fileprivate func setFile(_ url: URL, filename: String?) {
        file = url
        self.filename = filename
    }

    fileprivate func addFileBytes(_ count: Int) { fileBytes += count }

    fileprivate func addField(_ name: String, _ value: String) { fields[name, default: []].append(value) }

    /// Removes the file now, rather than when the upload is released.
    func removeFile() {
        if let file { try? FileManager.default.removeItem(at: file) }
        file = nil
    }
}

/// A header value and its `; key=value` parameters, quoted strings unquoted
/// (`form-data; name="file"; filename="a; b.wav"`).
struct HeaderParameters {
    let value: String
    private var parameters: [String: String] = [:]

    init(_ header: String) {
        var scalars = Substring(header)
        func skipSpaces() { scalars = scalars.drop { $0 == " " || $0 == "\t" } }
        // A token or a quoted string, up to the next `stop` outside quotes.
        func word(until stop: Set<Character>) -> String {
            skipSpaces()
            if scalars.first == "\"" {
                scalars.removeFirst()
                var text = ""
                while let character = scalars.first {
                    scalars.removeFirst()
                    if character == "\\", let escaped = scalars.first {
                        scalars.removeFirst()
                        text.append(escaped)
                    } else if character == "\"" {
                        break
                    } else {
                        text.append(character)
                    }
                }
                scalars = scalars.drop { !stop.contains($0) }
                return text
            }
            let token = scalars.prefix { !stop.contains($0) }
            scalars = scalars.dropFirst(token.count)
            return token.trimmingCharacters(in: .whitespaces)
        }
        value = word(until: [";"])
        while scalars.first == ";" {
            scalars.removeFirst()
            let key = word(until: ["=", ";"]).lowercased()
            var text = ""
            if scalars.first == "=" {
                scalars.removeFirst()
                text = word(until: [";"])
            }
            if !key.isEmpty, parameters[key] == nil { parameters[key] = text }
        }
    }

    subscript(key: String) -> String? { parameters[key.lowercased()] }
}

/// The parser's callbacks: which part is being read, and where its bytes go. The parser's
/// callbacks cannot throw, so a problem is kept in `failure` and thrown after the buffer.
private final class FormReader {
    let upload: AudioUpload
    let directory: URL
    let fileLimit: Int
    var failure: ServerError?

    private var headers: [(String, String)] = []
    private var name: String?
    private var started = false
    private var isFile = false
    private var field: [UInt8] = []
    private var handle: FileHandle?
    /// File bytes not yet written: the parser hands over short pieces (it stops at every CR
    /// byte), so they are written a megabyte at a time.
    private var pending: [UInt8] = []
    private var open = false

    init(upload: AudioUpload, directory: URL, fileLimit: Int) {
        self.upload = upload
        self.directory = directory
        self.fileLimit = fileLimit
    }

    func header(_ name: String, _ value: String) {
        open = true
        headers.append((name, value))
    }

    func body(_ bytes: inout ByteBuffer) {
        guard failure == nil else { return }
        open = true
        if !started { startPart() }
        guard failure == nil else { return }
        if isFile {
            upload.addFileBytes(bytes.readableBytes)
            if upload.fileBytes > fileLimit {
                failure = .audioTooLarge(limit: fileLimit)
                return
            }
            pending.append(contentsOf: bytes.readableBytesView)
            if pending.count >= 1 << 20 { flush() }
        } else {
            guard field.count + bytes.readableBytes <= AudioUpload.fieldLimit else {
                failure = .badRequest("The form field '\(name ?? "")' is longer than \(AudioUpload.fieldLimit) bytes.", param: name)
                return
            }
            field.append(contentsOf: bytes.readableBytesView)
        }
    }

    func partComplete() {
        guard failure == nil else { return }
        if !started { startPart() }
        guard failure == nil else { return }
        if isFile {
            flush()
            try? handle?.close()
            handle = nil
        } else if let name {
            upload.addField(name, String(decoding: field, as: UTF8.self))
        }
        headers = []
        name = nil
        started = false
        isFile = false
        field = []
        open = false
    }

    /// After the last buffer: a part still open means the body stopped before its closing
    /// boundary.
    func finish() throws {
        if let failure { throw failure }
        if open || started {
            throw ServerError.badRequest("The upload ended before the multipart body was complete; send the whole file.", param: "file")
        }
    }

    func abandon() {
        try? handle?.close()
        handle = nil
        upload.removeFile()
    }

    /// A part's headers are complete once its first body bytes (or its end) arrive.
    private func startPart() {
        started = true
        let disposition = headers.first { $0.0.lowercased() == "content-disposition" }.map { HeaderParameters($0.1) }
        guard let disposition, disposition.value.lowercased() == "form-data", let partName = disposition["name"] else {
            failure = .badRequest("A part of the multipart body has no Content-Disposition: form-data with a name.")
            return
        }
        name = partName
        guard partName == "file" else { return }
        guard upload.file == nil else {
            failure = .badRequest("The form has more than one file; send one audio file per request.", param: "file")
            return
        }
        isFile = true
        let filename = disposition["filename"]
        let url = directory.appendingPathComponent("hearth-audio-\(UUID().uuidString)" + Self.fileExtension(filename))
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let handle = try? FileHandle(forWritingTo: url) else {
            failure = ServerError(status: .internalServerError,
                                  message: "Cannot write the upload to \(directory.path); check that the folder exists and has free space.",
                                  type: "server_error")
            return
        }
        self.handle = handle
        upload.setFile(url, filename: filename)
    }

    private func flush() {
        guard !pending.isEmpty, let handle else { return }
        do {
            try handle.write(contentsOf: pending)
        } catch {
            failure = ServerError(status: .init(code: 507), message: "Cannot write the upload: \(error.localizedDescription)",
                                  type: "server_error")
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// The client's extension (".wav", ".webm"), so that ffmpeg and a person reading the
    /// folder both see the format; only short alphanumeric ones, never a path.
    private static func fileExtension(_ filename: String?) -> String {
        guard let filename, let dot = filename.lastIndex(of: ".") else { return "" }
        let suffix = filename[filename.index(after: dot)...]
        guard (1...10).contains(suffix.count), suffix.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return "" }
        return "." + suffix.lowercased()
    }
}
