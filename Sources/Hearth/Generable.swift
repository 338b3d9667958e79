import Foundation
import HearthEngine

/// A type a model can generate: its JSON Schema comes from its `Decodable` conformance, read
/// once by decoding a stand-in that notes every key and type asked for (so a plain struct with
/// synthesized `Decodable` needs nothing more), with a description per field from
/// `fieldDescriptions`. Generation is held to the schema, so the answer always decodes.
///
/// A protocol rather than a macro: a macro needs swift-syntax, which adds minutes to every
/// clean build of an app that depends on Hearth, and `Decodable` already says everything the
/// schema needs but the descriptions.
///
/// ```swift
/// struct Weather: Generable {
///     var city: String
///     var celsius: Int
///     var conditions: [String]
///     var windy: Bool?
///     static let fieldDescriptions = ["celsius": "Temperature in degrees Celsius"]
/// }
/// let weather = try await chat.respond(to: "Weather in Paris?", generating: Weather.self)
/// ```
///
/// Types whose decoding the stand-in cannot follow (custom `init(from:)` that validates, or
/// dictionaries) declare `jsonSchema` themselves.
public protocol Generable: Decodable, Sendable {
    /// A description of each field, by its coding key.
    static var fieldDescriptions: [String: String] { get }
    /// The type's JSON Schema.
    static var jsonSchema: JSONValue { get throws }
}

extension Generable {
    public static var fieldDescriptions: [String: String] { [:] }

    public static var jsonSchema: JSONValue {
        get throws { try SchemaRecorder.schema(of: Self.self) }
    }
}

/// Reads a `Decodable` type's JSON Schema by decoding it from a stand-in decoder that answers
/// every request with a placeholder and notes what was asked.
enum SchemaRecorder {
    /// What one decoding noted.
    final class Node {
        enum Kind { case unknown, string, integer, number, boolean, object, array }
        var kind = Kind.unknown
        var properties: [(key: String, node: Node, required: Bool)] = []
        var items: Node?
        var enumValues: [JSONValue]?
        var descriptions: [String: String] = [:]
    }

    struct Failure: Error { let message: String }

    static func schema(of type: any Decodable.Type) throws -> JSONValue {
        let node = Node()
        do {
            _ = try decode(type, into: node, depth: 0)
        } catch let failure as Failure {
            throw HearthError.invalidArgument("Cannot read a JSON Schema from \(type): \(failure.message); declare its jsonSchema.")
        } catch {
            throw HearthError.invalidArgument("Cannot read a JSON Schema from \(type) (\(error)); declare its jsonSchema.")
        }
        return json(node)
    }

    static func json(_ node: Node) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = []
        if let values = node.enumValues {
            members.append(("enum", .array(values)))
            return .object(members)
        }
        switch node.kind {
        case .unknown: return .object([])
        case .string: members.append(("type", .string("string")))
        case .integer: members.append(("type", .string("integer")))
        case .number: members.append(("type", .string("number")))
        case .boolean: members.append(("type", .string("boolean")))
        case .array:
            members.append(("type", .string("array")))
            members.append(("items", node.items.map(json) ?? .object([])))
        case .object:
            members.append(("type", .string("object")))
            members.append(("properties", .object(node.properties.map { property in
                var schema = json(property.node)
                if let text = node.descriptions[property.key], case .object(var fields) = schema {
                    fields.append(("description", .string(text)))
                    schema = .object(fields)
                }
                return (property.key, schema)
            })))
            members.append(("required", .array(node.properties.filter(\.required).map { .string($0.key) })))
            members.append(("additionalProperties", .bool(false)))
        }
        return .object(members)
    }

    /// Decodes `type` from a stand-in that fills `node`.
    static func decode(_ type: any Decodable.Type, into node: Node, depth: Int) throws -> any Decodable {
        guard depth < 16 else { throw Failure(message: "it nests more than 16 levels (a recursive type?)") }
        if let generable = type as? any Generable.Type { node.descriptions = generable.fieldDescriptions }
        if let values = enumValues(type) {
            node.enumValues = values
            node.kind = .string
        }
        switch type {
        case is String.Type: node.kind = .string; return ""
        case is Bool.Type: node.kind = .boolean; return false
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type, is UInt16.Type,
             is UInt32.Type, is UInt64.Type:
            node.kind = .integer
        case is Double.Type, is Float.Type:
            node.kind = .number
        default: break
        }
        return try type.init(from: StandIn(node: node, depth: depth))
    }

    /// The raw values of a `CaseIterable` enum with `String` or `Int` raw values.
    static func enumValues(_ type: any Decodable.Type) -> [JSONValue]? {
        guard let cases = type as? any CaseIterable.Type else { return nil }
        func values<T: CaseIterable>(_: T.Type) -> [JSONValue]? {
            T.allCases.map { value -> JSONValue? in
                switch value {
                case let v as any RawRepresentable<String>: return .string(v.rawValue)
                case let v as any RawRepresentable<Int>: return .number(Double(v.rawValue))
                default: return nil
                }
            }.reduce([JSONValue]()) { list, v in v.map { list + [$0] } ?? list }
        }
        let found = values(cases)
        return found?.isEmpty == false ? found : nil
    }

    struct StandIn: Decoder {
        let node: Node
        let depth: Int
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            node.kind = .object
            return KeyedDecodingContainer(Keyed<Key>(node: node, depth: depth))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            node.kind = .array
            let items = Node()
            node.items = items
            return Unkeyed(items: items, depth: depth)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(node: node, depth: depth) }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let node: Node
        let depth: Int
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool { true }

        func add(_ key: Key, required: Bool) -> Node {
            if let existing = node.properties.first(where: { $0.key == key.stringValue }) { return existing.node }
            let child = Node()
            node.properties.append((key.stringValue, child, required))
            return child
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            // `decodeIfPresent` asks this first: the field may be missing or null.
            if let i = node.properties.firstIndex(where: { $0.key == key.stringValue }) {
                node.properties[i].required = false
            } else {
                node.properties.append((key.stringValue, Node(), false))
            }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let child = add(key, required: true)
            guard let value = try SchemaRecorder.decode(type, into: child, depth: depth + 1) as? T else {
                throw Failure(message: "\(key.stringValue) did not decode as \(type)")
            }
            return value
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            let child = add(key, required: false)
            if let i = node.properties.firstIndex(where: { $0.key == key.stringValue }) { node.properties[i].required = false }
            return try SchemaRecorder.decode(type, into: child, depth: depth + 1) as? T
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            let child = add(key, required: true)
            child.kind = .object
            return KeyedDecodingContainer(Keyed<NestedKey>(node: child, depth: depth + 1))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            let child = add(key, required: true)
            child.kind = .array
            let items = Node()
            child.items = items
            return Unkeyed(items: items, depth: depth + 1)
        }

        func superDecoder() throws -> any Decoder { StandIn(node: node, depth: depth) }
        func superDecoder(forKey key: Key) throws -> any Decoder { StandIn(node: add(key, required: true), depth: depth + 1) }
    }

    /// An array: one element is decoded to learn its type, then the array ends.
    struct Unkeyed: UnkeyedDecodingContainer {
        let items: Node
        let depth: Int
        var codingPath: [any CodingKey] = []
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex > 0 }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            guard let value = try SchemaRecorder.decode(type, into: items, depth: depth + 1) as? T else {
                throw Failure(message: "an element did not decode as \(type)")
            }
            return value
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            currentIndex += 1
            items.kind = .object
            return KeyedDecodingContainer(Keyed<NestedKey>(node: items, depth: depth + 1))
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            currentIndex += 1
            items.kind = .array
            let inner = Node()
            items.items = inner
            return Unkeyed(items: inner, depth: depth + 1)
        }

        mutating func superDecoder() throws -> any Decoder { StandIn(node: items, depth: depth + 1) }
    }

    struct Single: SingleValueDecodingContainer {
        let node: Node
        let depth: Int
        var codingPath: [any CodingKey] = []

        func decodeNil() -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            if let placeholder = placeholder(type) { return placeholder }
            guard let value = try SchemaRecorder.decode(type, into: node, depth: depth + 1) as? T else {
                throw Failure(message: "a value did not decode as \(type)")
            }
            return value
        }

        /// A primitive's placeholder, noting its kind; an enum's first raw value when it has
        /// cases (so its `init(rawValue:)` succeeds).
        func placeholder<T>(_ type: T.Type) -> T? {
            switch type {
            case is String.Type:
                if node.kind != .string || node.enumValues == nil { node.kind = .string }
                if let first = node.enumValues?.first?.stringValue { return first as? T }
                return "" as? T
            case is Bool.Type: node.kind = .boolean; return false as? T
            case is Double.Type: if node.kind != .integer { node.kind = .number }; return 0.0 as? T
            case is Float.Type: if node.kind != .integer { node.kind = .number }; return Float(0) as? T
            case is Int.Type:
                node.kind = .integer
                if let first = node.enumValues?.first?.numberValue { return Int(first) as? T }
                return 0 as? T
            case is Int8.Type: node.kind = .integer; return Int8(0) as? T
            case is Int16.Type: node.kind = .integer; return Int16(0) as? T
            case is Int32.Type: node.kind = .integer; return Int32(0) as? T
            case is Int64.Type: node.kind = .integer; return Int64(0) as? T
            case is UInt.Type: node.kind = .integer; return UInt(0) as? T
            case is UInt8.Type: node.kind = .integer; return UInt8(0) as? T
            case is UInt16.Type: node.kind = .integer; return UInt16(0) as? T
            case is UInt32.Type: node.kind = .integer; return UInt32(0) as? T
            case is UInt64.Type: node.kind = .integer; return UInt64(0) as? T
            default: return nil
            }
        }
    }
}
