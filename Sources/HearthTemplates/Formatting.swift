import Foundation

/// Python's two string formatting languages, in the common subset: `"%s" % x` (also the `format`
/// filter) and `"{}".format(x)`.
enum Formatting {
    /// `format % values`: conversions `s r d i f e g x o c %` with flags, width and precision.
    static func percent(_ format: String, _ values: Value, at location: SourceLocation) throws -> String {
        var arguments: [Value]
        var mapping: Dict?
        switch values {
        case .tuple(let items): arguments = items
        case .dict(let dict): arguments = []; mapping = dict
        default: arguments = [values]
        }
        var result = ""
        var scalars = PythonText.scalars(format)[...]
        var used = 0
        func nextArgument() throws -> Value {
            guard used < arguments.count else { throw TemplateFailure("not enough arguments for format string", at: location) }
            used += 1
            return arguments[used - 1]
        }
        while let scalar = scalars.popFirst() {
            guard scalar == "%" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            var value: Value?
            if scalars.first == "(" {
                scalars.removeFirst()
                var key = ""
                while let c = scalars.popFirst(), c != ")" { key.unicodeScalars.append(c) }
                guard let found = mapping?[key] else { throw TemplateFailure("format requires a mapping with key '\(key)'", at: location) }
                value = found
            }
            var flags = ""
            while let c = scalars.first, "-+ #0".unicodeScalars.contains(c) {
                flags.unicodeScalars.append(c)
                scalars.removeFirst()
            }
            var width = ""
            while let c = scalars.first, ("0"..."9").contains(c) { width.unicodeScalars.append(c); scalars.removeFirst() }
            var precision: Int?
            if scalars.first == "." {
                scalars.removeFirst()
                var digits = ""
                while let c = scalars.first, ("0"..."9").contains(c) { digits.unicodeScalars.append(c); scalars.removeFirst() }
                precision = Int(digits) ?? 0
            }
            guard let conversion = scalars.popFirst() else { throw TemplateFailure("incomplete format", at: location) }
            guard (Int(width) ?? 0) <= PythonText.maxPadding, (precision ?? 0) <= 1000 else {
                throw TemplateFailure("the format's width or precision is too large", at: location)
            }
            if conversion == "%" {
                result += "%"
                continue
            }
            let argument = try value ?? nextArgument()
            var text: String
            switch conversion {
            case "s": text = argument.text
            case "r", "a": text = argument.repr
            case "d", "i", "u":
                guard let n = argument.number else { throw TemplateFailure("%d format: a number is required, not \(argument.typeName)", at: location) }
                guard let integer = argument.integer ?? (abs(n) < 9.2e18 ? Int(n.rounded(.towardZero)) : nil) else {
                    throw TemplateFailure("%d format: the number is out of range", at: location)
                }
                text = String(integer)
                if flags.contains("+"), !text.hasPrefix("-") { text = "+" + text }
            case "f", "F", "e", "E", "g", "G":
                guard let n = argument.number else { throw TemplateFailure("must be real number, not \(argument.typeName)", at: location) }
                text = String(format: "%\(flags.contains("+") ? "+" : "").\(precision ?? 6)\(conversion)", n)
            case "x", "X", "o":
                guard let n = argument.integer else { throw TemplateFailure("%\(conversion) format: an integer is required", at: location) }
                text = String(n, radix: conversion == "o" ? 8 : 16, uppercase: conversion == "X")
            case "c":
                if let n = argument.integer, let c = Unicode.Scalar(UInt32(clamping: n)) { text = String(c) } else { text = argument.text }
            default:
                throw TemplateFailure("unsupported format character '\(conversion)'", at: location)
            }
            if conversion == "s" || conversion == "r", let precision { text = PythonText.string(PythonText.scalars(text).prefix(precision)) }
            if let width = Int(width), PythonText.length(text) < width {
                guard width <= PythonText.maxPadding else { throw TemplateFailure("width \(width) is too large", at: location) }
                let padding = String(repeating: flags.contains("0") && !flags.contains("-") && conversion != "s" ? "0" : " ",
                                     count: width - PythonText.length(text))
                text = flags.contains("-") ? text + padding : padding + text
            }
            result += text
        }
        // Python forgives unused arguments only when they come as something subscriptable other than
        // a tuple or a string (a list, a dict, a range).
        let forgiving: Bool
        switch values {
        case .list, .dict, .range: forgiving = true
        default: forgiving = false
        }
        if !forgiving, used < arguments.count {
            throw TemplateFailure("not all arguments converted during string formatting", at: location)
        }
        return result
    }

    /// `str.format`: `{}`, `{0}`, `{name}`, `{0.attr}`/`{0[key]}` are not supported; `{{` and `}}` escape braces.
    static func format(_ format: String, _ arguments: Arguments, at location: SourceLocation) throws -> String {
        var result = ""
        var scalars = PythonText.scalars(format)[...]
        var automatic = 0
        while let scalar = scalars.popFirst() {
            if scalar == "}" {
                guard scalars.popFirst() == "}" else { throw TemplateFailure("single '}' encountered in format string", at: location) }
                result += "}"
                continue
            }
            guard scalar == "{" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            if scalars.first == "{" {
                scalars.removeFirst()
                result += "{"
                continue
            }
            var field = ""
            while let c = scalars.popFirst(), c != "}" { field.unicodeScalars.append(c) }
            var spec = ""
            if let colon = field.firstIndex(of: ":") {
                spec = String(field[field.index(after: colon)...])
                field = String(field[..<colon])
            }
            var conversion = ""
            if let bang = field.firstIndex(of: "!") {
                conversion = String(field[field.index(after: bang)...])
                field = String(field[..<bang])
            }
            let value: Value
            if field.isEmpty {
                guard automatic < arguments.positional.count else { throw TemplateFailure("Replacement index \(automatic) out of range", at: location) }
                value = arguments.positional[automatic]
                automatic += 1
            } else if let index = Int(field) {
                guard index < arguments.positional.count else { throw TemplateFailure("Replacement index \(index) out of range", at: location) }
                value = arguments.positional[index]
            } else if let found = arguments.keywords.last(where: { $0.name == field }) {
                value = found.value
            } else {
                throw TemplateFailure("'\(field)'", at: location)
            }
            var text = conversion == "r" ? value.repr : value.text
            if !spec.isEmpty {
                if let width = Int(spec.trimmingCharacters(in: CharacterSet(charactersIn: "<>^"))), PythonText.length(text) < width,
                    width <= PythonText.maxPadding
                {
                    let padding = String(repeating: " ", count: width - PythonText.length(text))
                    let rightAligned = spec.hasPrefix(">") || (!spec.hasPrefix("<") && value.number != nil && value.integer != nil)
                    text = rightAligned ? padding + text : text + padding
                } else if spec.hasPrefix("."), spec.hasSuffix("f"), let digits = Int(spec.dropFirst().dropLast()), let n = value.number {
                    text = String(format: "%.\(digits)f", n)
                }
            }
            result += text
        }
        return result
    }
}
