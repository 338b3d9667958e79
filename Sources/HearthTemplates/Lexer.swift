/// One token of a template: literal text between tags, a tag delimiter, or a piece of an expression.
struct Token: Sendable {
    enum Kind: Sendable, Equatable {
        case text(String)
        case variableBegin, variableEnd, blockBegin, blockEnd
        case name(String)
        case string(String)
        case integer(Int)
        case float(Double)
        case symbol(String)
        case end
    }

    var kind: Kind
    var location: SourceLocation
}

/// Splits template source into tokens the way jinja2's lexer does with `trim_blocks=True` and
/// `lstrip_blocks=True`, the settings transformers renders chat templates with:
/// - newlines are normalised to `\n` and one trailing newline of the source is dropped;
/// - `{%-`, `{{-`, `{#-` strip all whitespace before the tag, `-%}`, `-}}`, `-#}` all after it;
/// - a block or comment tag alone on its line loses the spaces and tabs before it (`{%+` keeps them),
///   and the first newline after `%}` or `#}` is dropped (`+%}` keeps it).
struct Lexer {
    private let source: [Unicode.Scalar]
    private var lineStarts: [Int] = [0]
    private var position = 0
    private var tokens: [Token] = []

    init(source text: String) {
        // jinja2 splits on \r\n, \r and \n, drops a final empty line, and joins with \n.
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.unicodeScalars.count)
        var iterator = text.unicodeScalars.makeIterator()
        var pending = iterator.next()
        while let scalar = pending {
            pending = iterator.next()
            if scalar == "\r" {
                scalars.append("\n")
                if pending == "\n" { pending = iterator.next() }
            } else {
                scalars.append(scalar)
            }
        }
        if scalars.last == "\n" { scalars.removeLast() }
        source = scalars
        for (index, scalar) in scalars.enumerated() where scalar == "\n" { lineStarts.append(index + 1) }
    }

    static func tokenize(_ text: String) throws -> [Token] {
        var lexer = Lexer(source: text)
        try lexer.run()
        return lexer.tokens
    }

    func location(_ offset: Int) -> SourceLocation {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if lineStarts[mid] <= offset { low = mid } else { high = mid - 1 }
        }
        return SourceLocation(line: low + 1, column: offset - lineStarts[low] + 1)
    }

    private func at(_ offset: Int) -> Unicode.Scalar? {
        offset < source.count ? source[offset] : nil
    }

    private func matches(_ text: String, at offset: Int) -> Bool {
        var i = offset
        for scalar in text.unicodeScalars {
            guard i < source.count, source[i] == scalar else { return false }
            i += 1
        }
        return true
    }

    private func nextTagStart(from offset: Int) -> Int? {
        var i = offset
        while i + 1 < source.count {
            if source[i] == "{", source[i + 1] == "{" || source[i + 1] == "%" || source[i + 1] == "#" { return i }
            i += 1
        }
        return nil
    }

    private mutating func emitText(_ scalars: ArraySlice<Unicode.Scalar>, at offset: Int) {
        guard !scalars.isEmpty else { return }
        tokens.append(Token(kind: .text(PythonText.string(scalars)), location: location(offset)))
    }

    private mutating func skipWhitespace() {
        while let scalar = at(position), PythonText.isWhitespace(scalar) { position += 1 }
    }

    private mutating func run() throws {
        var lineStarting = true
        while position < source.count {
            guard let tagStart = nextTagStart(from: position) else {
                emitText(source[position...], at: position)
                break
            }
            var text = source[position..<tagStart]
            let kind = source[tagStart + 1]
            let sign = at(tagStart + 2).flatMap { $0 == "-" || $0 == "+" ? $0 : nil }
            if sign == "-" {
                while let last = text.last, PythonText.isWhitespace(last) { text.removeLast() }
            } else if sign != "+", kind != "{" {
                let lineStart = (text.lastIndex(of: "\n").map { $0 + 1 }) ?? text.startIndex
                if lineStart > text.startIndex || lineStarting, text[lineStart...].allSatisfy(PythonText.isWhitespace) {
                    text = text[..<lineStart]
                }
            }
            emitText(text, at: position)
            position = tagStart + 2 + (sign == nil ? 0 : 1)
            switch kind {
            case "#":
                try comment(startingAt: tagStart)
            case "%" where isRawBlock():
                try rawBlock(startingAt: tagStart)
            default:
                try tag(kind: kind, startingAt: tagStart)
            }
            lineStarting = position > 0 && source[position - 1] == "\n"
        }
        tokens.append(Token(kind: .end, location: location(source.count)))
    }

    private mutating func comment(startingAt start: Int) throws {
        var i = position
        while i + 1 < source.count, !(source[i] == "#" && source[i + 1] == "}") { i += 1 }
        guard i + 1 < source.count else { throw TemplateFailure("the comment is never closed with '#}'", at: location(start)) }
        let sign = i > position ? source[i - 1] : nil
        position = i + 2
        finishTag(sign: sign, trims: true)
    }

    private mutating func finishTag(sign: Unicode.Scalar?, trims: Bool) {
        if sign == "-" {
            skipWhitespace()
        } else if sign != "+", trims, at(position) == "\n" {
            position += 1
        }
    }

    private func isRawBlock() -> Bool {
        var i = position
        while let scalar = at(i), PythonText.isWhitespace(scalar) { i += 1 }
        guard matches("raw", at: i) else { return false }
        i += 3
        while let scalar = at(i), PythonText.isWhitespace(scalar) { i += 1 }
        return matches("%}", at: i) || matches("-%}", at: i) || matches("+%}", at: i)
    }

    /// `{% raw %}…{% endraw %}`: the body is text, whitespace control still applies at its edges, as
    /// jinja2 applies it: `trim_blocks` keeps the newline after `{% raw %}` but takes the one after
    /// `{% endraw %}`, and `lstrip_blocks` strips the indentation before `{% endraw %}`.
    private mutating func rawBlock(startingAt start: Int) throws {
        while at(position) != "%" { position += 1 }
        let openSign = source[position - 1]
        position += 2
        finishTag(sign: openSign == "-" || openSign == "+" ? openSign : nil, trims: false)
        let lineStarting = position > 0 && source[position - 1] == "\n"
        var i = position
        while let candidate = nextTagStart(from: i) {
            var j = candidate + 2
            let sign = at(j).flatMap { $0 == "-" || $0 == "+" ? $0 : nil }
            if sign != nil { j += 1 }
            while let scalar = at(j), PythonText.isWhitespace(scalar) { j += 1 }
            if source[candidate + 1] == "%", matches("endraw", at: j) {
                j += 6
                while let scalar = at(j), PythonText.isWhitespace(scalar) { j += 1 }
                let closeSign = at(j).flatMap { $0 == "-" || $0 == "+" ? $0 : nil }
                if closeSign != nil { j += 1 }
                if matches("%}", at: j) {
                    var body = source[position..<candidate]
                    if sign == "-" {
                        while let last = body.last, PythonText.isWhitespace(last) { body.removeLast() }
                    } else if sign != "+" {
                        let lineStart = (body.lastIndex(of: "\n").map { $0 + 1 }) ?? body.startIndex
                        if lineStart > body.startIndex || lineStarting, body[lineStart...].allSatisfy(PythonText.isWhitespace) {
                            body = body[..<lineStart]
                        }
                    }
                    emitText(body, at: position)
                    position = j + 2
                    finishTag(sign: closeSign, trims: true)
                    return
                }
            }
            i = candidate + 1
        }
        throw TemplateFailure("the raw block is never closed with '{% endraw %}'", at: location(start))
    }

    private mutating func tag(kind: Unicode.Scalar, startingAt start: Int) throws {
        let isBlock = kind == "%"
        tokens.append(Token(kind: isBlock ? .blockBegin : .variableBegin, location: location(start)))
        var brackets: [Unicode.Scalar] = []
        while true {
            skipWhitespace()
            guard position < source.count else {
                throw TemplateFailure("the tag is never closed with '\(isBlock ? "%}" : "}}")'", at: location(start))
            }
            if brackets.isEmpty {
                let close = isBlock ? "%}" : "}}"
                for sign in ["-", "+", ""] where matches(sign + close, at: position) {
                    tokens.append(Token(kind: isBlock ? .blockEnd : .variableEnd, location: location(position)))
                    position += sign.count + 2
                    finishTag(sign: sign.unicodeScalars.first, trims: isBlock)
                    return
                }
            }
            try expressionToken(brackets: &brackets)
        }
    }

    private static let symbols = [
        "**", "//", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~", "<", ">", "=", ".", ",", ":", "|",
        "(", ")", "[", "]", "{", "}",
    ]

    private mutating func expressionToken(brackets: inout [Unicode.Scalar]) throws {
        let start = position
        let scalar = source[position]
        let here = location(start)
        if scalar == "_" || scalar.properties.isAlphabetic {
            while let next = at(position), next == "_" || next.properties.isAlphabetic || next.properties.numericType != nil {
                position += 1
            }
            tokens.append(Token(kind: .name(PythonText.string(source[start..<position])), location: here))
            return
        }
        if scalar == "'" || scalar == "\"" {
            tokens.append(Token(kind: .string(try stringLiteral(quote: scalar)), location: here))
            return
        }
        if ("0"..."9").contains(scalar) {
            tokens.append(Token(kind: number(), location: here))
            return
        }
        for symbol in Self.symbols where matches(symbol, at: position) {
            switch symbol {
            case "(", "[", "{":
                brackets.append(symbol.unicodeScalars.first!)
            case ")", "]", "}":
                let opening: Unicode.Scalar = symbol == ")" ? "(" : symbol == "]" ? "[" : "{"
                guard brackets.last == opening else {
                    throw TemplateFailure("unexpected '\(symbol)'", at: here)
                }
                brackets.removeLast()
            default:
                break
            }
            position += symbol.unicodeScalars.count
            tokens.append(Token(kind: .symbol(symbol), location: here))
            return
        }
        throw TemplateFailure("unexpected character '\(scalar)'", at: here)
    }

    private mutating func digits() -> String {
        var text = ""
        while let scalar = at(position), ("0"..."9").contains(scalar) || (scalar == "_" && at(position + 1).map { ("0"..."9").contains($0) } == true) {
            if scalar != "_" { text.unicodeScalars.append(scalar) }
            position += 1
        }
        return text
    }

    private mutating func number() -> Token.Kind {
        // An integer right after a dot is an attribute index (`foo.0`), never a float's tail.
        let afterDot = position > 0 && source[position - 1] == "."
        var text = digits()
        var isFloat = false
        if !afterDot, at(position) == ".", let next = at(position + 1), ("0"..."9").contains(next) {
            position += 1
            text += "." + digits()
            isFloat = true
        }
        if !afterDot, at(position) == "e" || at(position) == "E" {
            var lookahead = position + 1
            if at(lookahead) == "+" || at(lookahead) == "-" { lookahead += 1 }
            if let next = at(lookahead), ("0"..."9").contains(next) {
                let sign = at(position + 1) == "-" ? "-" : ""
                position = lookahead
                text += "e" + sign + digits()
                isFloat = true
            }
        }
        if isFloat { return .float(Double(text)!) }
        return Int(text).map { .integer($0) } ?? .float(Double(text)!)
    }

    /// A string literal, unescaped as Python's `unicode-escape` codec does (unknown escapes stay as written).
    private mutating func stringLiteral(quote: Unicode.Scalar) throws -> String {
        let start = position
        position += 1
        var result = String.UnicodeScalarView()
        while true {
            guard let scalar = at(position) else { throw TemplateFailure("the string is never closed", at: location(start)) }
            position += 1
            if scalar == quote { return String(result) }
            guard scalar == "\\", let escape = at(position) else {
                result.append(scalar)
                continue
            }
            position += 1
            switch escape {
            case "\n": break
            case "\\": result.append("\\")
            case "'": result.append("'")
            case "\"": result.append("\"")
            case "a": result.append("\u{07}")
            case "b": result.append("\u{08}")
            case "f": result.append("\u{0C}")
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "v": result.append("\u{0B}")
            case "0"..."7":
                var value = escape.value - 0x30
                var count = 1
                while count < 3, let next = at(position), ("0"..."7").contains(next) {
                    value = value * 8 + next.value - 0x30
                    position += 1
                    count += 1
                }
                result.append(Unicode.Scalar(value)!)
            case "x", "u", "U":
                let width = escape == "x" ? 2 : escape == "u" ? 4 : 8
                let digits = PythonText.string(source[position..<min(source.count, position + width)])
                guard digits.unicodeScalars.count == width, let value = UInt32(digits, radix: 16),
                    let decoded = Unicode.Scalar(value)
                else { throw TemplateFailure("malformed \\\(escape) escape in a string", at: location(position - 2)) }
                position += width
                result.append(decoded)
            default:
                result.append("\\")
                result.append(escape)
            }
        }
    }
}
