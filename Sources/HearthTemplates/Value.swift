import HearthCore

/// A value while a template renders: the data of ``TemplateValue`` plus what only exists inside
/// a render (jinja2's `Undefined`, namespaces, the `loop` object, functions, lazy ranges).
enum Value {
    /// jinja2's default `Undefined`: renders empty, is falsy, fails when used as a value. It
    /// remembers what was missing so the failure can say so.
    case undefined(String)
    case none
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    /// markupsafe's `Markup`, what `|safe` and `|escape` return: a string that escapes what is
    /// added to it with `+` or `%`. Everywhere else it behaves as the string it holds.
    case markup(String)
    case list([Value])
    /// Python's tuple: a list that prints as `(a, b)` and never equals a list.
    case tuple([Value])
    case dict(Dict)
    case namespace(Namespace)
    case loop(LoopState)
    case function(Function)
    /// Python's `range`: computed on demand so `range(n)` costs nothing until iterated. `stop` is
    /// kept as given because Python prints it (`range(0, 10, 3)`); `count` is the number of items.
    case range(start: Int, stop: Int, step: Int, count: Int)
    /// What jinja2's `map`/`select`/`items`… filters return (generators, used up by one pass) and
    /// `dict.items()`/`keys()`/`values()` return (views): iterable, but not lists.
    case iterator(IteratorBox)
}

/// A generator, reverse iterator or dict view, with Python's single-pass behaviour for the first two.
final class IteratorBox {
    enum Kind: String {
        case generator, listReverseIterator = "list_reverseiterator", dictItems = "dict_items", dictKeys = "dict_keys",
            dictValues = "dict_values", reversed, rangeIterator = "range_iterator",
            dictReverseKeyIterator = "dict_reversekeyiterator", dictReverseValueIterator = "dict_reversevalueiterator",
            dictReverseItemIterator = "dict_reverseitemiterator"
    }

    let kind: Kind
    let items: [Value]
    /// Where a generator failed after making `items`: Python raises it when the reader gets there.
    let failure: TemplateFailure?
    private var position = 0

    init(_ kind: Kind, _ items: [Value], failure: TemplateFailure? = nil) {
        self.kind = kind
        self.items = items
        self.failure = failure
    }

    var isView: Bool { kind == .dictItems || kind == .dictKeys || kind == .dictValues }

    /// Everything not yet consumed; a generator is empty afterwards, a view can be read again.
    func drain() throws -> [Value] {
        let remaining = drainMade()
        if let failure, !isView { throw failure }
        return remaining
    }

    /// The items not yet consumed that the generator made before its `failure`, if it has one.
    func drainMade() -> [Value] {
        if isView { return items }
        defer { position = items.count }
        return Array(items[position...])
    }

    func next() throws -> Value? {
        if isView { return items.first }
        guard position < items.count else {
            if let failure { throw failure }
            return nil
        }
        defer { position += 1 }
        return items[position]
    }
}

/// A dict key: Python dicts take any hashable value; templates use strings and, rarely, numbers
/// or tuples (`x[1, 2]`). `True`, `1` and `1.0` are the same key, as in Python, and the dict keeps
/// the one it saw first, which is the one it prints.
enum DictKey: Hashable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case double(Double)
    case none
    indirect case tuple([DictKey])

    init?(_ value: Value) {
        switch value {
        case .string(let s), .markup(let s): self = .string(s)
        case .int(let i): self = .int(i)
        case .bool(let b): self = .bool(b)
        case .double(let d): self = .double(d)
        case .none: self = .none
        case .tuple(let items):
            var keys: [DictKey] = []
            for item in items {
                guard let key = DictKey(item) else { return nil }
                keys.append(key)
            }
            self = .tuple(keys)
        default: return nil
        }
    }

    /// The key as Python hashes and compares it: a bool or a whole float is the int it equals.
    private var normalized: DictKey {
        switch self {
        case .bool(let b): return .int(b ? 1 : 0)
        case .double(let d) where d.rounded() == d && abs(d) < 9e18: return .int(Int(d))
        case .tuple(let keys): return .tuple(keys.map(\.normalized))
        default: return self
        }
    }

    static func == (a: DictKey, b: DictKey) -> Bool {
        switch (a.normalized, b.normalized) {
        case (.string(let x), .string(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.none, .none): return true
        case (.tuple(let x), .tuple(let y)): return x == y
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch normalized {
        case .string(let s): hasher.combine(0); hasher.combine(s)
        case .int(let i): hasher.combine(1); hasher.combine(i)
        case .double(let d): hasher.combine(2); hasher.combine(d)
        case .none: hasher.combine(3)
        case .tuple(let keys): hasher.combine(4); hasher.combine(keys)
        case .bool: preconditionFailure("a normalized key is never a bool")
        }
    }

    /// The key a dict would hash `value` to, or nil for a value that is hashable but can never be a
    /// key here (an Undefined, a function, a generator); lists, dicts and dict views are unhashable, as in Python.
    init?(hashing value: Value, at location: SourceLocation) throws {
        if let key = DictKey(value) {
            self = key
            return
        }
        switch value {
        case .list, .dict:
            throw TemplateFailure("unhashable type: '\(value.typeName)'", at: location)
        case .iterator(let box) where box.kind == .dictKeys || box.kind == .dictItems:
            throw TemplateFailure("unhashable type: '\(box.kind.rawValue)'", at: location)
        case .tuple(let items):
            for item in items { _ = try DictKey(hashing: item, at: location) }
            return nil
        default:
            return nil
        }
    }

    var value: Value {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .int(i)
        case .bool(let b): return .bool(b)
        case .double(let d): return .double(d)
        case .none: return .none
        case .tuple(let keys): return .tuple(keys.map(\.value))
        }
    }
}

/// An insertion-ordered dict.
struct Dict {
    private(set) var keys: [DictKey] = []
    private var storage: [DictKey: Value] = [:]

    init() {}

    subscript(key: String) -> Value? {
        get { storage[.string(key)] }
        set { self[DictKey.string(key)] = newValue }
    }

    subscript(key: DictKey) -> Value? {
        get { storage[key] }
        set {
            setOrdered(newValue, forKey: key, in: &storage, keys: &keys)
        }
    }

    var count: Int { keys.count }
    var entries: [(key: DictKey, value: Value)] { keys.map { ($0, storage[$0]!) } }
    var stringKeys: [String] { keys.compactMap { if case .string(let s) = $0 { return s } else { return nil } } }
    var values: [Value] { keys.map { storage[$0]! } }
}

/// The object `namespace()` returns; `{% set ns.x = … %}` changes it in place, across scopes.
final class Namespace {
    var attributes = Dict()
}

/// A callable: a builtin, a macro or a bound method.
struct Function {
    /// Builtins print as Python functions, a template's macros as jinja2's `Macro` objects.
    enum Kind { case builtin, macro, caller }

    var name: String
    var kind = Kind.builtin
    var body: (Interpreter, Arguments, SourceLocation) throws -> Value
}

/// Evaluated call arguments.
struct Arguments {
    var positional: [Value] = []
    var keywords: [(name: String, value: Value)] = []

    /// Binds arguments to Python-style parameters: each by position or by name, else its default.
    func bind(_ function: String, _ parameters: [(name: String, defaultValue: Value?)], at location: SourceLocation) throws
        -> [Value]
    {
        guard positional.count <= parameters.count else {
            throw TemplateFailure("\(function)() takes at most \(parameters.count) arguments (\(positional.count) given)", at: location)
        }
        var bound: [Value?] = positional.map { $0 }
        bound += Array(repeating: nil, count: parameters.count - positional.count)
        for (name, value) in keywords {
            guard let position = parameters.firstIndex(where: { $0.name == name }) else {
                throw TemplateFailure("\(function)() got an unexpected keyword argument '\(name)'", at: location)
            }
            guard bound[position] == nil else {
                throw TemplateFailure("\(function)() got multiple values for argument '\(name)'", at: location)
            }
            bound[position] = value
        }
        return try parameters.indices.map { i in
            if let value = bound[i] ?? parameters[i].defaultValue { return value }
            throw TemplateFailure("\(function)() missing required argument '\(parameters[i].name)'", at: location)
        }
    }
}

extension Value {
    init(_ value: TemplateValue) {
        switch value {
        case .none: self = .none
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        case .array(let items): self = .list(items.map(Value.init))
        case .object(let object):
            var dict = Dict()
            for (key, item) in object.entries { dict[key] = Value(item) }
            self = .dict(dict)
        }
    }

    var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    /// Python's `type(x).__name__`, for messages.
    var typeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .none: return "NoneType"
        case .bool: return "bool"
        case .int: return "int"
        case .double: return "float"
        case .string: return "str"
        case .markup: return "Markup"
        case .list: return "list"
        case .tuple: return "tuple"
        case .dict: return "dict"
        case .namespace: return "Namespace"
        case .loop: return "LoopContext"
        case .function: return "function"
        case .range: return "range"
        case .iterator(let box): return box.kind.rawValue
        }
    }

    /// Python truthiness.
    var truthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0
        case .string(let s), .markup(let s): return !s.isEmpty
        case .list(let items), .tuple(let items): return !items.isEmpty
        case .dict(let dict): return dict.count > 0
        case .range(_, _, _, let count): return count > 0
        case .namespace, .loop, .function: return true
        case .iterator(let box): return box.isView ? !box.items.isEmpty : true
        }
    }

    /// The number, when this is one (`bool` counts, as in Python).
    var number: Double? {
        switch self {
        case .bool(let b): return b ? 1 : 0
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The integer, for `int` and `bool`.
    var integer: Int? {
        switch self {
        case .bool(let b): return b ? 1 : 0
        case .int(let i): return i
        default: return nil
        }
    }

    /// Python's `str(x)`, as `{{ x }}` prints it.
    var text: String {
        switch self {
        case .undefined: return ""
        case .string(let s), .markup(let s): return s
        default: return repr
        }
    }

    /// Python's `repr(x)`, as lists and dicts print their items.
    var repr: String { repr(depth: 0, sortingKeys: false) }

    /// `repr(x)` with every dict's keys sorted, as `pprint.pformat` writes a value that fits on a line.
    func repr(sortingKeys: Bool) -> String { repr(depth: 0, sortingKeys: sortingKeys) }

    /// Nesting this deep is printed as `...` (Python gives up with RecursionError near 1000 levels).
    private static let maxReprDepth = 500

    private func repr(depth: Int, sortingKeys: Bool) -> String {
        if depth > Value.maxReprDepth { return "..." }
        switch self {
        case .undefined: return "Undefined"
        case .none: return "None"
        case .bool(let b): return b ? "True" : "False"
        case .int(let i): return String(i)
        case .double(let d): return PythonText.floatRepr(d)
        case .string(let s): return PythonText.stringRepr(s)
        case .markup(let s): return "Markup(" + PythonText.stringRepr(s) + ")"
        case .list(let items): return "[" + items.map { $0.repr(depth: depth + 1, sortingKeys: sortingKeys) }.joined(separator: ", ") + "]"
        case .tuple(let items):
            return "(" + items.map { $0.repr(depth: depth + 1, sortingKeys: sortingKeys) }.joined(separator: ", ") + (items.count == 1 ? ",)" : ")")
        case .dict(let dict):
            var entries = dict.entries
            if sortingKeys {
                let location = SourceLocation(line: 0, column: 0)
                entries.sort { a, b in
                    (try? pythonLess(a.key.value, b.key.value, at: location)) ?? (a.key.value.typeName < b.key.value.typeName)
                }
            }
            return "{" + entries.map { $0.key.value.repr + ": " + $0.value.repr(depth: depth + 1, sortingKeys: sortingKeys) }.joined(separator: ", ") + "}"
        case .namespace(let namespace):
            return "<Namespace " + Value.dict(namespace.attributes).repr(depth: depth + 1, sortingKeys: sortingKeys) + ">"
        case .loop: return "<LoopContext>"
        case .function(let function):
            switch function.kind {
            case .builtin: return "<function \(function.name)>"
            case .macro: return "<Macro '\(function.name)'>"
            case .caller: return "<Macro anonymous>"
            }
        case .range(let start, let stop, let step, _):
            return step == 1 ? "range(\(start), \(stop))" : "range(\(start), \(stop), \(step))"
        case .iterator(let box):
            // A generator prints its address in Python, which no render can reproduce.
            guard box.isView else { return "<\(box.kind.rawValue) object>" }
            return box.kind.rawValue + "(" + Value.list(box.items).repr(depth: depth + 1, sortingKeys: sortingKeys) + ")"
        }
    }

    /// Python's `==`.
    static func equal(_ a: Value, _ b: Value, depth: Int = 0) -> Bool {
        guard depth <= maxReprDepth else { return false }
        switch (a, b) {
        case (.undefined, .undefined), (.none, .none): return true
        case (.string(let x), .string(let y)), (.markup(let x), .markup(let y)), (.string(let x), .markup(let y)),
            (.markup(let x), .string(let y)):
            return PythonText.equal(x, y)
        case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1, depth: depth + 1) }
        case (.dict(let x), .dict(let y)):
            return x.count == y.count
                && x.entries.allSatisfy { entry in y[entry.key].map { equal(entry.value, $0, depth: depth + 1) } ?? false }
        case (.namespace(let x), .namespace(let y)): return x === y
        case (.loop(let x), .loop(let y)): return x === y
        case (.range(let start, _, let step, let count), .range(let otherStart, _, let otherStep, let otherCount)):
            // Ranges are equal when they hold the same numbers.
            return count == otherCount && (count == 0 || start == otherStart && (count == 1 || step == otherStep))
        case (.iterator(let x), .iterator(let y)):
            return x === y || (x.isView && x.kind == y.kind && equal(.list(x.items), .list(y.items)))
        default:
            if let x = a.integer, let y = b.integer { return x == y }
            if let x = a.number, let y = b.number { return x == y }
            return false
        }
    }
}

extension Value {
    /// The items a `for` loop visits: list items, dict keys, string characters, range numbers.
    func iterationItems(at location: SourceLocation, limit: Int) throws -> [Value] {
        switch self {
        case .undefined: return []
        case .list(let items), .tuple(let items): return items
        case .dict(let dict): return dict.keys.map(\.value)
        case .string(let s), .markup(let s): return s.unicodeScalars.map { .string(String($0)) }
        case .iterator(let box): return try box.drain()
        case .range(let start, _, let step, let count):
            guard count <= limit else {
                throw TemplateFailure("a range of \(count) items is larger than the render allows", at: location)
            }
            return (0..<count).map { .int(start + $0 * step) }
        default:
            throw TemplateFailure("'\(typeName)' object is not iterable", at: location)
        }
    }

    var isIterable: Bool {
        switch self {
        case .undefined, .list, .tuple, .dict, .string, .markup, .range, .iterator: return true
        default: return false
        }
    }
}

/// Python's ordering (`<`), which only numbers, strings and lists have with each other.
func pythonLess(_ a: Value, _ b: Value, at location: SourceLocation, operatorName: String = "<", depth: Int = 0) throws -> Bool {
    guard depth < 500 else { throw TemplateFailure("maximum recursion depth exceeded in comparison", at: location) }
    let a = a.plain
    let b = b.plain
    switch (a, b) {
    case (.string(let x), .string(let y)): return PythonText.less(x, y)
    case (.list(let x), .list(let y)), (.tuple(let x), .tuple(let y)):
        for (p, q) in zip(x, y) where !Value.equal(p, q) {
            return try pythonLess(p, q, at: location, operatorName: operatorName, depth: depth + 1)
        }
        return x.count < y.count
    case (.undefined(let name), _), (_, .undefined(let name)):
        throw TemplateFailure("'\(name)' is undefined", at: location)
    default:
        if let x = a.integer, let y = b.integer { return x < y }
        if let x = a.number, let y = b.number { return x < y }
        throw TemplateFailure("'\(operatorName)' not supported between instances of '\(a.typeName)' and '\(b.typeName)'", at: location)
    }
}

extension Value {
    /// A tuple seen as a list, for code that accepts either.
    var tupleAsList: Value {
        if case .tuple(let items) = self { return .list(items) }
        return self
    }
}

extension Value {
    /// A `Markup` as the plain string it holds; other values unchanged.
    var plain: Value {
        if case .markup(let s) = self { return .string(s) }
        return self
    }

    /// markupsafe's `escape`: a string with `& < > " '` escaped, as `Markup`; a `Markup` unchanged.
    var escaped: Value {
        switch self {
        case .markup: return self
        default: return .markup(Value.htmlEscape(text))
        }
    }

    static func htmlEscape(_ s: String) -> String {
        var result = ""
        htmlEscapes.escape(s, into: &result)
        return result
    }

    private static let htmlEscapes = EscapeTable(["&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&#34;", "'": "&#39;"])
}
