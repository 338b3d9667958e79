import Foundation
import HearthCore

extension TemplateValue {
    /// Parses JSON text as Python's `json.loads` would: object keys keep their order, numbers
    /// without a fraction or exponent are integers, the others doubles.
    public init(json text: String) throws {
        self = try JSONValue.parse(Array(text.utf8), with: TemplateJSONBuilder())
    }

    /// Parses UTF-8 JSON data; see ``init(json:)``.
    public init(jsonData data: Data) throws {
        self = try JSONValue.parse([UInt8](data), with: TemplateJSONBuilder())
    }
}

/// Template values from the package's JSON parser: Python's `int` and `float` kept apart, a
/// repeated key in its first place with its last value (a dict built in order).
private struct TemplateJSONBuilder: JSONBuilder {
    func null() -> TemplateValue { .none }
    func bool(_ value: Bool) -> TemplateValue { .bool(value) }
    func number(_ literal: JSONNumberLiteral) -> TemplateValue? {
        if literal.isInteger, let integer = Int(literal.text) { return .int(integer) }
        return literal.doubleValue.map(TemplateValue.double)
    }
    func string(_ value: String) -> TemplateValue { .string(value) }
    func array(_ items: [TemplateValue]) -> TemplateValue { .array(items) }
    func object(_ members: [(key: String, value: TemplateValue)]) -> TemplateValue {
        .object(TemplateObject(members.map { ($0.key, $0.value) }))
    }
}
