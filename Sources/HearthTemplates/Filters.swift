import Foundation

/// A filter: what it makes of one call.
typealias Filter = @Sendable (FilterCall) throws -> Value

/// jinja2's built-in filters (3.1), with transformers' `tojson`.
extension Interpreter {
    /// Every filter by name; the names a template may use are this table's keys. Aliases
    /// (`d`, `e`, `count`) and pairs that differ by one choice (`min`/`max`, `select`/`reject`)
    /// share a function, which reads the name it was called by.
    static let filters: [String: Filter] = [
        "abs": { try $0.absolute() }, "attr": { try $0.attr() }, "batch": { try $0.batch() },
        "capitalize": { try $0.capitalize() }, "center": { try $0.center() }, "count": { try $0.length() },
        "d": { try $0.defaultValue() }, "default": { try $0.defaultValue() }, "dictsort": { try $0.dictSort() },
        "e": { try $0.escape() }, "escape": { try $0.escape() }, "first": { try $0.first() },
        "float": { try $0.float() }, "forceescape": { try $0.forceEscape() }, "format": { try $0.format() },
        "indent": { try $0.indent() }, "int": { try $0.int() }, "items": { try $0.itemPairs() },
        "join": { try $0.join() }, "last": { try $0.last() }, "length": { try $0.length() },
        "list": { try $0.list() }, "lower": { try $0.lower() }, "map": { try $0.map() }, "max": { try $0.minOrMax() },
        "min": { try $0.minOrMax() }, "pprint": { try $0.prettyPrint() }, "reject": { try $0.selectOrReject() },
        "rejectattr": { try $0.selectOrReject() }, "replace": { try $0.replace() }, "reverse": { try $0.reverse() },
        "round": { try $0.round() }, "safe": { try $0.safe() }, "select": { try $0.selectOrReject() },
        "selectattr": { try $0.selectOrReject() }, "slice": { try $0.slice() }, "sort": { try $0.sort() },
        "string": { try $0.string() }, "sum": { try $0.sum() }, "title": { try $0.title() },
        "tojson": { try $0.toJSON() }, "trim": { try $0.trim() }, "truncate": { try $0.truncate() },
        "unique": { try $0.unique() }, "upper": { try $0.upper() }, "wordcount": { try $0.wordCount() },
    ]

    func applyFilter(_ name: String, to original: Value, arguments: Arguments, at location: SourceLocation) throws -> Value {
        guard let filter = Self.filters[name] else { throw TemplateFailure("No filter named '\(name)' found.", at: location) }
        return try filter(FilterCall(interpreter: self, name: name, original: original, arguments: arguments, location: location))
    }
}

/// One use of a filter: the value it is applied to, its arguments and where it stands.
struct FilterCall {
    let interpreter: Interpreter
    /// The name the filter was called by.
    let name: String
    /// The value as given; markup stays markup.
    let original: Value
    /// The value as most filters read it, markup as a plain string.
    let value: Value
    let arguments: Arguments
    let location: SourceLocation

    init(interpreter: Interpreter, name: String, original: Value, arguments: Arguments, location: SourceLocation) {
        self.interpreter = interpreter
        self.name = name
        self.original = original
        value = original.plain
        self.arguments = arguments
        self.location = location
    }

    func bind(_ parameters: [(name: String, defaultValue: Value?)]) throws -> [Value] {
        try arguments.bind(name, parameters, at: location)
    }

    func items(_ v: Value) throws -> [Value] { try v.iterationItems(at: location, limit: Interpreter.maxRange) }

    func text(_ v: Value) -> String { v.text }

    /// `int`, `float` and `indent` reach Python's int(), float() or `+` with the value, which fail
    /// on an Undefined; the other filters read it as empty.
    func requireDefined() throws {
        if case .undefined(let message) = value { throw TemplateFailure(message, at: location) }
    }
}

// MARK: - The filters

extension FilterCall {
    /// Python's `abs`; a bool counts as 0 or 1.
    func absolute() throws -> Value {
        switch value {
        case .int(let i): return i == .min ? .double(-Double(i)) : .int(abs(i))
        case .bool(let b): return .int(b ? 1 : 0)
        case .double(let d): return .double(abs(d))
        default: throw TemplateFailure("bad operand type for abs(): '\(value.typeName)'", at: location)
        }
    }

    /// An attribute in Python's sense only, never a dict key.
    func attr() throws -> Value {
        guard case .string(let attributeName) = try bind([("name", nil)])[0] else {
            throw TemplateFailure("attr() needs a string", at: location)
        }
        // Python attributes only: unlike `obj.name`, `attr` never falls back to a dict key.
        if case .undefined(let message) = value { throw TemplateFailure(message, at: location) }
        if case .namespace = value { return try interpreter.attribute(attributeName, of: value, at: location) }
        if case .loop = value { return try interpreter.attribute(attributeName, of: value, at: location) }
        return Methods.method(attributeName, of: value) ?? .undefined("'\(value.typeName) object' has no attribute '\(attributeName)'")
    }

    /// Lists of `linecount` items, the last filled with `fill_with` when given.
    func batch() throws -> Value {
        return try generator { yield in
            let bound = try bind([("linecount", nil), ("fill_with", Value.none)])
            guard let size = bound[0].integer, size > 0 else { throw TemplateFailure("batch size must be positive", at: location) }
            var current: [Value] = []
            for item in try items(value) {
                current.append(item)
                if current.count == size { yield(.list(current)); current = [] }
            }
            if !current.isEmpty {
                if case .none = bound[1] {} else {
                    try interpreter.checkSize(size, at: location)
                    current += Array(repeating: bound[1], count: size - current.count)
                }
                yield(.list(current))
            }
        }
    }

    /// The first character upper-cased, the rest lower-cased.
    func capitalize() throws -> Value {
        return .string(PythonText.capitalize(text(value)))
    }

    /// Centred in `width` columns.
    func center() throws -> Value {
        let width = try bind([("width", .int(80))])[0].integer ?? 80
        try interpreter.checkSize(width, at: location)
        let s = text(value)
        let padding = max(0, width - PythonText.length(s))
        let left = padding / 2 + (padding & width & 1)
        return .string(String(repeating: " ", count: left) + s + String(repeating: " ", count: padding - left))
    }

    /// `default_value` for an undefined (or, with `boolean`, for any false value).
    func defaultValue() throws -> Value {
        let bound = try arguments.bind(name, [("default_value", .string("")), ("boolean", .bool(false))], at: location)
        if original.isUndefined || (bound[1].truthy && !original.truthy) { return bound[0] }
        return original
    }

    /// A mapping's `(key, value)` pairs sorted by key or by value.
    func dictSort() throws -> Value {
        let bound = try bind([("case_sensitive", .bool(false)), ("by", .string("key")), ("reverse", .bool(false))])
        guard case .dict(let dict) = value else { throw TemplateFailure("dictsort needs a mapping", at: location) }
        let byValue: Bool
        switch bound[1] {
        case .string("key"): byValue = false
        case .string("value"): byValue = true
        default: throw TemplateFailure("You can only sort by either \"key\" or \"value\"", at: location)
        }
        let pairs = dict.entries.map { [$0.key.value, $0.value] }
        let sorted = try sortValues(pairs.map { Value.tuple($0) }, caseSensitive: bound[0].truthy, reverse: bound[2].truthy,
                                    at: location) { pair in
            guard case .tuple(let p) = pair else { return pair }
            return p[byValue ? 1 : 0]
        }
        return .list(sorted)
    }

    /// HTML-escaped, as markupsafe's `escape`; markup unchanged.
    func escape() throws -> Value {
        original.escaped
    }

    /// The first item, or an undefined when there is none.
    func first() throws -> Value {
        if case .iterator(let box) = value { return try box.next() ?? .undefined("No first item, sequence was empty.") }
        return try items(value).first ?? .undefined("No first item, sequence was empty.")
    }

    /// Python's `float`, or `default` when it fails.
    func float() throws -> Value {
        try requireDefined()
        let fallback = try bind([("default", .double(0))])[0]
        return pythonFloat(value).map { .double($0) } ?? fallback
    }

    /// HTML-escaped, markup too.
    func forceEscape() throws -> Value {
        .markup(Value.htmlEscape(original.text))
    }

    /// printf-style `%` formatting with the arguments.
    func format() throws -> Value {
        if !arguments.keywords.isEmpty {
            var dict = Dict()
            for (key, item) in arguments.keywords { dict[key] = item }
            return .string(try Formatting.percent(text(value), .dict(dict), at: location))
        }
        return .string(try Formatting.percent(text(value), .tuple(arguments.positional), at: location))
    }

    /// Every line but the first (or also the first, or also blank ones) indented.
    func indent() throws -> Value {
        try requireDefined()
        // jinja2 appends "\n" to the value itself before splitting it into lines.
        guard case .string = value else {
            throw TemplateFailure("unsupported operand type(s) for +=: '\(value.typeName)' and 'str'", at: location)
        }
        let bound = try bind([("width", .int(4)), ("first", .bool(false)), ("blank", .bool(false))])
        let indentation: String
        if case .string(let s) = bound[0] {
            indentation = s
        } else {
            let width = bound[0].integer ?? 4
            try interpreter.checkSize(width, at: location)
            indentation = String(repeating: " ", count: max(0, width))
        }
        let lines = PythonText.splitLines(text(value) + "\n")
        var result: String
        if bound[2].truthy {
            result = lines.joined(separator: "\n" + indentation)
        } else {
            result = lines.first ?? ""
            let rest = lines.dropFirst()
            if !rest.isEmpty {
                result += "\n" + rest.map { $0.isEmpty ? $0 : indentation + $0 }.joined(separator: "\n")
            }
        }
        return .string(bound[1].truthy ? indentation + result : result)
    }

    /// Python's `int` (then `int(float(x))`), or `default` when both fail.
    func int() throws -> Value {
        try requireDefined()
        let bound = try bind([("default", .int(0)), ("base", .int(10))])
        return pythonInt(value, base: bound[1].integer ?? 10).map { .int($0) } ?? bound[0]
    }

    /// A mapping's `(key, value)` pairs; nothing for an undefined.
    func itemPairs() throws -> Value {
        return try generator { yield in
            switch value {
            case .undefined: break
            case .dict(let dict): dict.entries.forEach { yield(.tuple([$0.key.value, $0.value])) }
            default: throw TemplateFailure("Can only get item pairs from a mapping.", at: location)
            }
        }
    }

    /// The items' text (or an attribute's) joined by `d`.
    func join() throws -> Value {
        let bound = try bind([("d", .string("")), ("attribute", Value.none)])
        var parts = try items(value)
        if case .none = bound[1] {} else { parts = try parts.map { try attributePath(bound[1], of: $0, at: location) } }
        return .string(parts.map(\.text).joined(separator: text(bound[0])))
    }

    /// The last item of a reversible sequence.
    func last() throws -> Value {
        if case .iterator(let box) = value, !box.isView {
            throw TemplateFailure("'\(box.kind.rawValue)' object is not reversible", at: location)
        }
        return try items(value).last ?? .undefined("No last item, sequence was empty.")
    }

    /// Python's `len`.
    func length() throws -> Value {
        switch value {
        case .undefined: return .int(0)
        case .string(let s): return .int(PythonText.length(s))
        case .list(let list), .tuple(let list): return .int(list.count)
        case .dict(let dict): return .int(dict.count)
        case .range(_, _, _, let count): return .int(count)
        case .iterator(let box) where box.isView: return .int(box.items.count)
        default: throw TemplateFailure("object of type '\(value.typeName)' has no len()", at: location)
        }
    }

    /// The items as a list.
    func list() throws -> Value {
        return .list(try items(value))
    }

    /// Lower-cased.
    func lower() throws -> Value {
        return .string(PythonText.lower(text(value)))
    }

    /// Each item through a filter, or each item's attribute.
    func map() throws -> Value {
        // jinja2 maps and selects only over a truthy value: None, undefined or empty give nothing.
        return try generator { yield in
            guard value.truthy else { return }
            if let attributeArgument = arguments.keywords.first(where: { $0.name == "attribute" })?.value {
                let fallback = arguments.keywords.first(where: { $0.name == "default" })?.value
                for item in try items(value) { yield(try attributePath(attributeArgument, of: item, default: fallback, at: location)) }
                return
            }
            guard case .string(let filterName) = arguments.positional.first ?? .none else {
                throw TemplateFailure("map requires a filter argument", at: location)
            }
            let rest = Arguments(positional: Array(arguments.positional.dropFirst()), keywords: arguments.keywords)
            for item in try items(value) { yield(try interpreter.applyFilter(filterName, to: item, arguments: rest, at: location)) }
        }
    }

    /// The smallest (`min`) or largest (`max`) item, by an attribute when given.
    func minOrMax() throws -> Value {
        let bound = try bind([("case_sensitive", .bool(false)), ("attribute", Value.none)])
        let sorted = try sortValues(try items(value), caseSensitive: bound[0].truthy, reverse: false, at: location) { item in
            if case .none = bound[1] { return item }
            return try attributePath(bound[1], of: item, at: location)
        }
        return (name == "min" ? sorted.first : sorted.last) ?? .undefined("No aggregated item, sequence was empty.")
    }

    /// Python's `repr`, keys sorted.
    func prettyPrint() throws -> Value {
        return .string(original.repr(sortingKeys: true))
    }

    /// `old` replaced by `new`, at most `count` times.
    func replace() throws -> Value {
        let bound = try bind([("old", nil), ("new", nil), ("count", Value.none)])
        return .string(PythonText.replace(text(value), text(bound[0]), text(bound[1]), count: bound[2].integer ?? -1))
    }

    /// Reversed, as Python's `reversed` gives it for the value's type.
    func reverse() throws -> Value {
        // reversed() gives what it can reverse an iterator of its own type; the rest (generators)
        // becomes a reversed list.
        let kind: IteratorBox.Kind
        switch value {
        case .string(let s): return .string(PythonText.string(PythonText.scalars(s).reversed()))
        case .list: kind = .listReverseIterator
        case .tuple, .undefined: kind = .reversed
        case .range: kind = .rangeIterator
        case .dict: kind = .dictReverseKeyIterator
        case .iterator(let box) where box.kind == .dictKeys: kind = .dictReverseKeyIterator
        case .iterator(let box) where box.kind == .dictValues: kind = .dictReverseValueIterator
        case .iterator(let box) where box.kind == .dictItems: kind = .dictReverseItemIterator
        default: return .list(try items(value).reversed())
        }
        return .iterator(IteratorBox(kind, try items(value).reversed()))
    }

    /// Rounded to `precision` digits, by `method` (common, ceil, floor).
    func round() throws -> Value {
        let bound = try bind([("precision", .int(0)), ("method", .string("common"))])
        guard let number = value.number else { throw TemplateFailure("round needs a number", at: location) }
        let precision = bound[0].integer ?? 0
        let scale = Foundation.pow(10, Double(precision))
        switch bound[1] {
        case .string("common"):
            // Python's round() keeps an int (or bool) an int, and rounds a float's exact binary value to
            // the nearest decimal, ties to even, as printf does.
            if let integer = value.integer { return .int(Self.roundInteger(integer, digits: precision)) }
            if precision >= 0, precision <= 300, number.isFinite, let rounded = Double(String(format: "%.\(precision)f", number)) {
                return .double(rounded)
            }
            return .double((number * scale).rounded(.toNearestOrEven) / scale)
        case .string("ceil"): return .double((number * scale).rounded(.up) / scale)
        case .string("floor"): return .double((number * scale).rounded(.down) / scale)
        default: throw TemplateFailure("method must be common, ceil or floor", at: location)
        }
    }

    /// Markup: printed without escaping.
    func safe() throws -> Value {
        .markup(original.text)
    }

    /// The items that pass a test (`select`) or fail it (`reject`), of themselves or of an attribute (`…attr`).
    func selectOrReject() throws -> Value {
        return try generator { yield in
            guard value.truthy else { return }
            let byAttribute = name.hasSuffix("attr")
            var positional = arguments.positional
            var attributeName: Value?
            if byAttribute {
                guard !positional.isEmpty else { throw TemplateFailure("Missing parameter for attribute name", at: location) }
                attributeName = positional.removeFirst()
            }
            let testName: String?
            if positional.isEmpty {
                testName = nil
            } else {
                guard case .string(let s) = positional.removeFirst() else { throw TemplateFailure("the test name must be a string", at: location) }
                testName = s
            }
            let testArguments = Arguments(positional: positional, keywords: arguments.keywords)
            let keep = name.hasPrefix("select")
            for item in try items(value) {
                let subject = try attributeName.map { try attributePath($0, of: item, at: location) } ?? item
                let passed = try testName.map { try interpreter.applyTest($0, to: subject, arguments: testArguments, at: location) } ?? subject.truthy
                if passed == keep { yield(item) }
            }
        }
    }

    /// The items cut into `slices` lists.
    func slice() throws -> Value {
        return try generator { yield in
            let bound = try bind([("slices", nil), ("fill_with", Value.none)])
            guard let count = bound[0].integer, count > 0 else { throw TemplateFailure("slices must be positive", at: location) }
            let list = try items(value)
            let perSlice = list.count / count
            let withExtra = list.count % count
            var offset = 0
            for index in 0..<count {
                let start = offset + index * perSlice
                if index < withExtra { offset += 1 }
                let end = offset + (index + 1) * perSlice
                var part = Array(list[min(start, list.count)..<min(max(start, end), list.count)])
                if case .none = bound[1] {} else if index >= withExtra { part.append(bound[1]) }
                yield(.list(part))
            }
        }
    }

    /// Sorted, by attributes when given (`attribute="a,b"`).
    func sort() throws -> Value {
        let bound = try bind([("reverse", .bool(false)), ("case_sensitive", .bool(false)), ("attribute", Value.none)])
        return .list(try sortValues(try items(value), caseSensitive: bound[1].truthy, reverse: bound[0].truthy, at: location) { item in
            // jinja2 sorts by a list of keys, one per attribute, so equal keys are never ordered
            // with `<` (two undefined attributes, two equal dicts).
            guard case .string(let paths) = bound[2], paths.unicodeScalars.contains(",") else {
                if case .none = bound[2] { return .list([item]) }
                return .list([try attributePath(bound[2], of: item, at: location)])
            }
            // `attribute="a,b"` sorts by a, then b.
            return .list(try paths.split(separator: ",", omittingEmptySubsequences: false).map { path in
                try attributePath(.string(String(path)), of: item, at: location)
            })
        })
    }

    /// The value's text; markup stays markup.
    func string() throws -> Value {
        if case .markup = original { return original }
        if case .string = value { return value }
        return .string(text(value))
    }

    /// The items (or an attribute of each) added to `start`.
    func sum() throws -> Value {
        let bound = try bind([("attribute", Value.none), ("start", .int(0))])
        var total = bound[1]
        for item in try items(value) {
            let addend: Value
            if case .none = bound[0] { addend = item } else { addend = try attributePath(bound[0], of: item, at: location) }
            total = try interpreter.binary("+", total, addend, at: location)
        }
        return total
    }

    /// jinja2's title case.
    func title() throws -> Value {
        return .string(PythonText.jinjaTitle(text(value)))
    }

    /// JSON as transformers' `tojson` writes it (Python's `json.dumps`).
    func toJSON() throws -> Value {
        let bound = try bind([("ensure_ascii", .bool(false)), ("indent", Value.none), ("separators", Value.none),
                              ("sort_keys", .bool(false))])
        var indent: String?
        switch bound[1] {
        case .none: indent = nil
        case .string(let s): indent = s
        default:
            try interpreter.checkSize(bound[1].integer ?? 0, at: location)
            indent = String(repeating: " ", count: max(0, bound[1].integer ?? 0))
        }
        var options = PythonJSON.Options(indent: indent, itemSeparator: indent == nil ? ", " : ",", keySeparator: ": ",
                                         sortKeys: bound[3].truthy, ensureASCII: bound[0].truthy)
        if case .tuple(let separators) = bound[2], separators.count == 2 {
            options.itemSeparator = text(separators[0])
            options.keySeparator = text(separators[1])
        } else if case .list(let separators) = bound[2], separators.count == 2 {
            options.itemSeparator = text(separators[0])
            options.keySeparator = text(separators[1])
        }
        return .string(try PythonJSON.dumps(value, options, at: location))
    }

    /// Whitespace (or `chars`) stripped from both ends.
    func trim() throws -> Value {
        let chars = try bind([("chars", Value.none)])[0]
        if case .none = chars { return .string(PythonText.strip(text(value))) }
        return .string(PythonText.strip(text(value), text(chars)))
    }

    /// Cut to `length` characters (with `leeway`), ending in `end`.
    func truncate() throws -> Value {
        let bound = try bind([("length", .int(255)), ("killwords", .bool(false)), ("end", .string("...")), ("leeway", Value.none)])
        guard case .string = value else {
            // jinja2 measures other values with len() and returns them as they are when short enough;
            // cutting one would need string methods it lacks.
            let count = try interpreter.applyFilter("length", to: value, arguments: Arguments(), at: location).integer ?? 0
            guard count > (bound[0].integer ?? 255) + (bound[3].integer ?? 5) else { return original }
            throw TemplateFailure("'\(value.typeName)' object has no attribute 'rsplit'", at: location)
        }
        let s = PythonText.scalars(text(value))
        let length = bound[0].integer ?? 255
        let end = text(bound[2])
        let leeway = bound[3].integer ?? 5
        if s.count <= length + leeway { return .string(text(value)) }
        let cut = max(0, length - PythonText.length(end))
        if bound[1].truthy { return .string(PythonText.string(s[..<cut]) + end) }
        var head = PythonText.string(s[..<cut])
        if let space = head.unicodeScalars.lastIndex(of: " ") { head = String(head.unicodeScalars[..<space]) }
        return .string(head + end)
    }

    /// The items without repeats, first ones kept.
    func unique() throws -> Value {
        return try generator { yield in
            let bound = try bind([("case_sensitive", .bool(false)), ("attribute", Value.none)])
            var seen: [Value] = []
            for item in try items(value) {
                var key = item
                if case .none = bound[1] {} else { key = try attributePath(bound[1], of: item, at: location) }
                if !bound[0].truthy, case .string(let s) = key { key = .string(s.lowercased()) }
                // jinja2 keeps the keys seen in a set.
                _ = try DictKey(hashing: key, at: location)
                if !seen.contains(where: { Value.equal($0, key) }) {
                    seen.append(key)
                    yield(item)
                }
            }
        }
    }

    /// Upper-cased.
    func upper() throws -> Value {
        return .string(PythonText.upper(text(value)))
    }

    /// The number of words.
    func wordCount() throws -> Value {
        return .int(text(value).split { !($0.isLetter || $0.isNumber || $0 == "_") }.count)
    }
}

// MARK: - What the filters share

extension FilterCall {
    /// jinja2's `map`, `select`, `unique`, `batch`, `slice` and `items` are Python generators: nothing
    /// runs until they are read, and a failure reaches the reader only after the items before it. They
    /// run here at once; a failure is kept with the items made before it, for whoever reads them.
    private func generator(_ body: (_ yield: (Value) -> Void) throws -> Void) throws -> Value {
        var made: [Value] = []
        do {
            try body { made.append($0) }
        } catch let failure as TemplateFailure {
            return .iterator(IteratorBox(.generator, made, failure: failure))
        }
        return .iterator(IteratorBox(.generator, made))
    }

    /// An attribute path as `selectattr`, `map` and `sort` take it: `"a.b"`, or an integer index. A
    /// part that is missing is `fallback` when one is given; looking further into it fails, as in jinja2.
    func attributePath(_ path: Value, of value: Value, default fallback: Value? = nil, at location: SourceLocation) throws -> Value {
        let parts: [Value] = path.integer.map { [.int($0)] }
            ?? path.text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0).map { .int($0) } ?? .string(String($0)) }
        var current = value
        for part in parts {
            current = try interpreter.item(part, of: current, at: location)
            if current.isUndefined, let fallback { current = fallback }
        }
        return current
    }

    /// Python's `round(n, digits)` for an integer: unchanged for `digits >= 0`, else to a multiple of
    /// `10 ** -digits`, ties to even.
    private static func roundInteger(_ n: Int, digits: Int) -> Int {
        guard digits < 0 else { return n }
        var unit = 1
        for _ in 0..<(-digits) {
            let (next, overflow) = unit.multipliedReportingOverflow(by: 10)
            if overflow { return 0 }
            unit = next
        }
        var quotient = n / unit
        var remainder = n % unit
        if remainder < 0 { quotient -= 1; remainder += unit }
        if remainder * 2 > unit || (remainder * 2 == unit && quotient % 2 != 0) { quotient += 1 }
        let (result, overflow) = quotient.multipliedReportingOverflow(by: unit)
        return overflow ? n : result
    }

    /// Sorts as jinja2's `sort`/`dictsort` do: Python ordering, strings case-folded unless case-sensitive.
    private func sortValues(_ values: [Value], caseSensitive: Bool, reverse: Bool, at location: SourceLocation,
                            key: (Value) throws -> Value) throws -> [Value]
    {
        func normalized(_ v: Value) -> Value {
            if !caseSensitive, case .string(let s) = v { return .string(s.lowercased()) }
            if !caseSensitive, case .list(let parts) = v { return .list(parts.map(normalized)) }
            return v
        }
        let keyed = try values.map { (key: normalized(try key($0)), value: $0) }
        var failure: Error?
        // Python's sort is stable, and so is this merge-based ordering of indices.
        let order = keyed.indices.sorted { a, b in
            do {
                if try pythonLess(keyed[a].key, keyed[b].key, at: location) { return !reverse }
                if try pythonLess(keyed[b].key, keyed[a].key, at: location) { return reverse }
                return a < b
            } catch {
                failure = error
                return a < b
            }
        }
        if let failure { throw failure }
        return order.map { keyed[$0].value }
    }

    /// Python's `int(x)`, then `int(float(x))`, as jinja2's `int` filter tries them.
    private func pythonInt(_ value: Value, base: Int) -> Int? {
        switch value {
        case .int(let i): return i
        case .bool(let b): return b ? 1 : 0
        case .double(let d): return d.isFinite && abs(d) < 9.2e18 ? Int(d.rounded(.towardZero)) : nil
        case .string(let s):
            var digits = PythonText.strip(s).replacingOccurrences(of: "_", with: "")
            var negative = false
            if digits.hasPrefix("-") || digits.hasPrefix("+") {
                negative = digits.hasPrefix("-")
                digits.removeFirst()
            }
            if base == 16, digits.lowercased().hasPrefix("0x") { digits.removeFirst(2) }
            if let i = Int(digits, radix: base) { return negative ? -i : i }
            return pythonFloat(value).flatMap { $0.isFinite && abs($0) < 9.2e18 ? Int($0.rounded(.towardZero)) : nil }
        default: return nil
        }
    }

    private func pythonFloat(_ value: Value) -> Double? {
        switch value {
        case .int, .bool, .double: return value.number
        case .string(let s):
            let trimmed = PythonText.strip(s).lowercased()
            switch trimmed {
            case "inf", "+inf", "infinity", "+infinity": return .infinity
            case "-inf", "-infinity": return -.infinity
            case "nan", "+nan", "-nan": return .nan
            default: return Double(trimmed.replacingOccurrences(of: "_", with: ""))
            }
        default: return nil
        }
    }
}
