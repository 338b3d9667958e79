/// A value handed to a chat template: the JSON-like data a conversation is made of.
///
/// Objects keep their keys in insertion order, as Python dicts do, because templates print them
/// (`tool | tojson`) and the order is part of the prompt. Integers and doubles stay apart, as
/// Python's `int` and `float` do (`1` renders as `1`, `1.0` as `1.0`).
public enum TemplateValue: Sendable, Equatable {
    /// Python's `None` (JSON `null`).
    case none
    /// A boolean.
    case bool(Bool)
    /// An integer.
    case int(Int)
    /// A floating-point number.
    case double(Double)
    /// A string.
    case string(String)
    /// A list.
    case array([TemplateValue])
    /// A mapping from strings to values, in insertion order.
    case object(TemplateObject)
}

/// An insertion-ordered mapping from strings to template values, like a Python dict.
public struct TemplateObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The keys, in insertion order.
    public private(set) var keys: [String] = []
    private var storage: [String: TemplateValue] = [:]

    /// An empty object.
    public init() {}

    /// An object with these entries, in this order; a repeated key keeps its first position and last value.
    public init(_ entries: [(String, TemplateValue)]) {
        for (key, value) in entries { self[key] = value }
    }

    /// Builds an object from a literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self.init(elements)
    }

    /// The value for `key`; setting appends a new key at the end, or replaces the value in place.
    public subscript(key: String) -> TemplateValue? {
        get { storage[key] }
        set {
            setOrdered(newValue, forKey: key, in: &storage, keys: &keys)
        }
    }

    /// The entries in insertion order.
    public var entries: [(key: String, value: TemplateValue)] {
        keys.map { ($0, storage[$0]!) }
    }

    /// The number of entries.
    public var count: Int { keys.count }

    /// Objects are equal when they hold the same keys with equal values, whatever the order (as Python dicts).
    public static func == (lhs: TemplateObject, rhs: TemplateObject) -> Bool {
        lhs.storage == rhs.storage
    }
}

extension TemplateValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer value.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A double value.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A boolean value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A list value.
    public init(arrayLiteral elements: TemplateValue...) { self = .array(elements) }
    /// An object value, keeping the literal's key order.
    public init(dictionaryLiteral elements: (String, TemplateValue)...) { self = .object(TemplateObject(elements)) }
    /// `None`.
    public init(nilLiteral: ()) { self = .none }
}
