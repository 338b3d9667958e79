import Foundation
import HearthCore

extension TemplateValue {
    /// Parses JSON text as Python's `json.loads` would: object keys keep their order, numbers
    /// without a fraction or exponent are integers, the others doubles.
    public init(json text: String) throws {
        var parser = JSONReader(bytes: Array(text.utf8))
        self = try parser.document()
    }

    /// Parses UTF-8 JSON data; see ``init(json:)``.
    public init(jsonData data: Data) throws {
        var parser = JSONReader(bytes: [UInt8](data))
        self = try parser.document()
    }
}

/// A strict JSON reader. Foundation's readers lose object key order, which templates print.
private struct JSONReader {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() throws -> TemplateValue {
        let value = try self.value(depth: 0)
        skipWhitespace()
        guard position == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    private func failure(_ reason: String) -> HearthError {
        .invalidArgument("Invalid JSON at byte \(position): \(reason).")
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func value(depth: Int) throws -> TemplateValue {
        guard depth < 512 else { throw failure("nested too deeply") }
        skipWhitespace()
        guard position < bytes.count else { throw failure("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var object = TemplateObject()
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(object)
            }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let key = try string()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                position += 1
                object[key] = try value(depth: depth + 1)
                skipWhitespace()
                guard position < bytes.count else { throw failure("unexpected end") }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                if bytes[position] == UInt8(ascii: "}") { position += 1; return .object(object) }
                throw failure("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            position += 1
            var items: [TemplateValue] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard position < bytes.count else { throw failure("unexpected end") }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                if bytes[position] == UInt8(ascii: "]") { position += 1; return .array(items) }
                throw failure("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .none
        default:
            return try number()
        }
    }

    private mutating func literal(_ word: String) throws {
        let expected = Array(word.utf8)
        guard position + expected.count <= bytes.count, Array(bytes[position..<position + expected.count]) == expected
        else { throw failure("unexpected character") }
        position += expected.count
    }

    private mutating func number() throws -> TemplateValue {
        let start = position
        var isInteger = true
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let digitsStart = position
        while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
        guard position > digitsStart else { throw failure("unexpected character") }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if isInteger, let integer = Int(text) { return .int(integer) }
        guard let double = Double(text) else { throw failure("malformed number \(text)") }
        return .double(double)
    }

    private mutating func string() throws -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var runStart = position
        func flushRun(_ reader: JSONReader, upTo end: Int) {
            scalars.append(contentsOf: String(decoding: reader.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                flushRun(self, upTo: position)
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw failure("control character in string") }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            flushRun(self, upTo: position)
            position += 1
            guard position < bytes.count else { throw failure("unterminated escape") }
            let escape = bytes[position]
            position += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code), position + 1 < bytes.count,
                    bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                {
                    let save = position
                    position += 2
                    let low = try hex4()
                    if (0xDC00...0xDFFF).contains(low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        position = save
                    }
                }
                // A lone surrogate cannot live in a Swift string; Python would keep it, we substitute.
                scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
            default:
                throw failure("unknown escape")
            }
            runStart = position
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count,
            let code = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16)
        else { throw failure("malformed \\u escape") }
        position += 4
        return code
    }
}
