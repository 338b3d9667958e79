/// The Python methods templates call on values: `content.strip()`, `message.items()`, ….
/// The sandbox transformers uses is immutable, so methods that change a list or dict are refused.
enum Methods {
    private static let unsafe: Set<String> = [
        "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "update", "setdefault", "popitem",
    ]

    static func method(_ name: String, of original: Value) -> Value? {
        let value = original.plain
        let body: ((Arguments, SourceLocation) throws -> Value)?
        switch value {
        case .string(let s): body = stringMethod(name, s)
        case .dict(let dict): body = dictMethod(name, dict)
        case .list(let items): body = listMethod(name, items)
        // A tuple has only count and index.
        case .tuple(let items): body = name == "copy" ? nil : listMethod(name, items)
        default: body = nil
        }
        if let body {
            return .function(Function(name: name) { _, arguments, location in try body(arguments, location) })
        }
        if unsafe.contains(name), case .list = value {
            return refused(name, value)
        }
        if unsafe.contains(name), case .dict = value {
            return refused(name, value)
        }
        return nil
    }

    private static func refused(_ name: String, _ value: Value) -> Value {
        .function(Function(name: name) { _, _, location in
            throw TemplateFailure("access to attribute '\(name)' of '\(value.typeName)' object is unsafe", at: location)
        })
    }

    private static func string(_ value: Value, _ what: String, at location: SourceLocation) throws -> String {
        guard case .string(let s) = value.plain else {
            throw TemplateFailure("\(what) must be str, not \(value.typeName)", at: location)
        }
        return s
    }

    private static func optionalString(_ value: Value, at location: SourceLocation) throws -> String? {
        if case .none = value { return nil }
        return try string(value, "the argument", at: location)
    }

    private static func prefixes(_ value: Value, at location: SourceLocation) throws -> [String] {
        if case .tuple(let items) = value { return try items.map { try string($0, "a tuple item", at: location) } }
        return [try string(value, "the prefix", at: location)]
    }

    /// Python's `isalpha` letters: the general categories Lu, Ll, Lt, Lm and Lo.
    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    private static func stringMethod(_ name: String, _ s: String) -> ((Arguments, SourceLocation) throws -> Value)? {
        switch name {
        case "strip", "lstrip", "rstrip":
            return { arguments, location in
                let chars = try optionalString(try arguments.bind(name, [("chars", Value.none)], at: location)[0], at: location)
                return .string(PythonText.strip(s, chars, leading: name != "rstrip", trailing: name != "lstrip"))
            }
        case "split", "rsplit":
            return { arguments, location in
                let bound = try arguments.bind(name, [("sep", Value.none), ("maxsplit", .int(-1))], at: location)
                let separator = try optionalString(bound[0], at: location)
                let maxSplit = bound[1].integer ?? -1
                do {
                    let parts = name == "split"
                        ? try PythonText.split(s, separator: separator, maxSplit: maxSplit)
                        : try PythonText.rsplit(s, separator: separator, maxSplit: maxSplit)
                    return .list(parts.map { .string($0) })
                } catch var failure as TemplateFailure {
                    failure.location = location
                    throw failure
                }
            }
        case "splitlines":
            return { _, _ in .list(PythonText.splitLines(s).map { .string($0) }) }
        case "startswith", "endswith":
            return { arguments, location in
                let bound = try arguments.bind(name, [("prefix", nil)], at: location)
                let scalars = PythonText.scalars(s)
                return .bool(try prefixes(bound[0], at: location).contains { prefix in
                    let p = PythonText.scalars(prefix)
                    return name == "startswith" ? scalars.starts(with: p) : scalars.reversed().starts(with: p.reversed())
                })
            }
        case "upper": return { _, _ in .string(PythonText.upper(s)) }
        case "lower": return { _, _ in .string(PythonText.lower(s)) }
        case "title": return { _, _ in .string(PythonText.title(s)) }
        case "capitalize": return { _, _ in .string(PythonText.capitalize(s)) }
        case "swapcase":
            return { _, _ in
                .string(s.unicodeScalars.map { c in
                    c.properties.isUppercase ? String(c).lowercased() : c.properties.isLowercase ? String(c).uppercased() : String(c)
                }.joined())
            }
        case "replace":
            return { arguments, location in
                let bound = try arguments.bind(name, [("old", nil), ("new", nil), ("count", .int(-1))], at: location)
                return .string(PythonText.replace(s, try string(bound[0], "replace() argument 1", at: location),
                                                  try string(bound[1], "replace() argument 2", at: location),
                                                  count: bound[2].integer ?? -1))
            }
        case "find", "rfind", "index", "rindex":
            return { arguments, location in
                let sub = try string(try arguments.bind(name, [("sub", nil)], at: location)[0], "the argument", at: location)
                let position = PythonText.find(s, sub, reverse: name.hasPrefix("r"))
                if position < 0, name.hasSuffix("index") { throw TemplateFailure("substring not found", at: location) }
                return .int(position)
            }
        case "count":
            return { arguments, location in
                let sub = try string(try arguments.bind(name, [("sub", nil)], at: location)[0], "the argument", at: location)
                return .int(PythonText.count(s, sub))
            }
        case "join":
            return { arguments, location in
                let items = try arguments.bind(name, [("iterable", nil)], at: location)[0]
                    .iterationItems(at: location, limit: Interpreter.maxRange)
                return .string(try items.map { try string($0, "sequence item", at: location) }.joined(separator: s))
            }
        case "format":
            return { arguments, location in .string(try Formatting.format(s, arguments, at: location)) }
        case "removeprefix", "removesuffix":
            return { arguments, location in
                let affix = try string(try arguments.bind(name, [("affix", nil)], at: location)[0], "the argument", at: location)
                let scalars = PythonText.scalars(s)
                let a = PythonText.scalars(affix)
                if name == "removeprefix", scalars.starts(with: a) { return .string(PythonText.string(scalars.dropFirst(a.count))) }
                if name == "removesuffix", !a.isEmpty, scalars.reversed().starts(with: a.reversed()) {
                    return .string(PythonText.string(scalars.dropLast(a.count)))
                }
                return .string(s)
            }
        case "isdecimal":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.numericType == .decimal }) }
        case "isdigit":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { [.decimal, .digit].contains($0.properties.numericType) }) }
        case "isnumeric":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { $0.properties.numericType != nil }) }
        case "isalpha":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy(isLetter)) }
        case "isalnum":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy { isLetter($0) || $0.properties.numericType != nil }) }
        case "isprintable":
            return { _, _ in .bool(s.unicodeScalars.allSatisfy(PythonText.isPrintable)) }
        case "isascii":
            return { _, _ in .bool(s.unicodeScalars.allSatisfy(\.isASCII)) }
        case "isidentifier":
            return { _, _ in
                guard let first = s.unicodeScalars.first, first == "_" || first.properties.isXIDStart else { return .bool(false) }
                return .bool(s.unicodeScalars.dropFirst().allSatisfy { $0.properties.isXIDContinue })
            }
        case "istitle":
            return { _, _ in .bool(PythonText.isTitle(s)) }
        case "casefold":
            return { _, _ in .string(PythonText.casefold(s)) }
        case "expandtabs":
            return { arguments, location in
                let size = try arguments.bind(name, [("tabsize", .int(8))], at: location)[0]
                guard let size = size.integer else { throw TemplateFailure("'\(size.typeName)' object cannot be interpreted as an integer", at: location) }
                guard size <= PythonText.maxPadding else { throw TemplateFailure("tab size \(size) is too large", at: location) }
                return .string(PythonText.expandTabs(s, size: size))
            }
        case "isspace":
            return { _, _ in .bool(!s.isEmpty && s.unicodeScalars.allSatisfy(PythonText.isWhitespace)) }
        case "islower", "isupper":
            return { _, _ in
                let cased = s.unicodeScalars.filter { $0.properties.isCased }
                return .bool(!cased.isEmpty && (name == "islower" ? s == s.lowercased() : s == s.uppercased()))
            }
        case "zfill", "center", "ljust", "rjust":
            return { arguments, location in
                let bound = try arguments.bind(name, [("width", nil), ("fillchar", .string(name == "zfill" ? "0" : " "))], at: location)
                guard let width = bound[0].integer else { throw TemplateFailure("width must be an integer", at: location) }
                guard width <= PythonText.maxPadding else { throw TemplateFailure("width \(width) is too large", at: location) }
                let fill = try string(bound[1], "the fill character", at: location)
                let length = PythonText.length(s)
                guard width > length else { return .string(s) }
                let padding = width - length
                switch name {
                case "ljust": return .string(s + String(repeating: fill, count: padding))
                case "rjust": return .string(String(repeating: fill, count: padding) + s)
                case "center":
                    let left = padding / 2 + (padding & width & 1)
                    return .string(String(repeating: fill, count: left) + s + String(repeating: fill, count: padding - left))
                default:
                    if let sign = s.unicodeScalars.first, sign == "+" || sign == "-" {
                        return .string(String(sign) + String(repeating: "0", count: padding) + String(s.unicodeScalars.dropFirst()))
                    }
                    return .string(String(repeating: "0", count: padding) + s)
                }
            }
        case "partition", "rpartition":
            return { arguments, location in
                let separator = try string(try arguments.bind(name, [("sep", nil)], at: location)[0], "the separator", at: location)
                let position = PythonText.find(s, separator, reverse: name == "rpartition")
                let scalars = PythonText.scalars(s)
                guard position >= 0 else {
                    return name == "partition" ? .tuple([.string(s), .string(""), .string("")]) : .tuple([.string(""), .string(""), .string(s)])
                }
                let end = position + PythonText.length(separator)
                return .tuple([.string(PythonText.string(scalars[..<position])), .string(separator),
                              .string(PythonText.string(scalars[end...]))])
            }
        default:
            return nil
        }
    }

    private static func dictMethod(_ name: String, _ dict: Dict) -> ((Arguments, SourceLocation) throws -> Value)? {
        switch name {
        case "items": return { _, _ in .iterator(IteratorBox(.dictItems, dict.entries.map { .tuple([$0.key.value, $0.value]) })) }
        case "keys": return { _, _ in .iterator(IteratorBox(.dictKeys, dict.keys.map(\.value))) }
        case "values": return { _, _ in .iterator(IteratorBox(.dictValues, dict.values)) }
        case "copy": return { _, _ in .dict(dict) }
        case "get":
            return { arguments, location in
                let bound = try arguments.bind(name, [("key", nil), ("default", Value.none)], at: location)
                return DictKey(bound[0]).flatMap { dict[$0] } ?? bound[1]
            }
        default: return nil
        }
    }

    private static func listMethod(_ name: String, _ items: [Value]) -> ((Arguments, SourceLocation) throws -> Value)? {
        switch name {
        case "index":
            return { arguments, location in
                let item = try arguments.bind(name, [("value", nil)], at: location)[0]
                guard let position = items.firstIndex(where: { Value.equal($0, item) }) else {
                    throw TemplateFailure("\(item.repr) is not in list", at: location)
                }
                return .int(position)
            }
        case "count":
            return { arguments, location in
                let item = try arguments.bind(name, [("value", nil)], at: location)[0]
                return .int(items.filter { Value.equal($0, item) }.count)
            }
        case "copy": return { _, _ in .list(items) }
        default: return nil
        }
    }
}
