import HearthCore

// Schemas that hold together — allOf's members, keywords beside $ref, keywords beside anyOf
// applied to each alternative — merged into one schema object before compiling.

extension JSONSchemaCompiler {
    /// `value` as one schema object with its `$ref` and `allOf` merged in; nil when it allows no
    /// value (`false`).
    mutating func resolved(_ value: JSONValue, at path: String) throws -> SchemaObject? {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 200 else {
            throw HearthError.invalidArgument("The JSON schema at \(path) is nested too deeply, or its allOf and $ref lead back to themselves.")
        }
        switch value {
        case .bool(true): return SchemaObject(members: [], path: path)
        case .bool(false): return nil
        case .object(let members):
            var schema = SchemaObject(members: members, path: path)
            try checkKeywords(schema)
            if let ref = schema["$ref"] {
                guard let pointer = ref.stringValue else { throw schema.error("$ref must be a string") }
                guard !resolvingRefs.contains(pointer) else {
                    throw HearthError.invalidArgument("The JSON schema at \(path): $ref \"\(pointer)\" is merged into itself (through allOf or keywords beside $ref); recursion is supported only through plain references.")
                }
                let (referenced, referencedPath) = try target(of: pointer, at: path)
                resolvingRefs.append(pointer)
                defer { resolvingRefs.removeLast() }
                guard let t = try resolved(referenced, at: referencedPath) else { return nil }
                guard let merged = try merge(t, schema.removing(["$ref"]), at: path) else { return nil }
                schema = merged
            }
            if let all = schema["allOf"] {
                guard case .array(let parts) = all, !parts.isEmpty else { throw schema.error("allOf must be a non-empty array of schemas") }
                var merged = schema.removing(["allOf"])
                for (i, part) in parts.enumerated() {
                    guard let p = try resolved(part, at: "\(path)/allOf/\(i)"), let m = try merge(merged, p, at: path) else { return nil }
                    merged = m
                }
                schema = merged
            }
            return schema
        default:
            throw HearthError.invalidArgument("The JSON schema at \(path) must be an object or a boolean, not \(value.jsonText).")
        }
    }

    /// Whether a schema constrains nothing (`true`, or annotations only).
    static func isTrivial(_ value: JSONValue) -> Bool {
        switch value {
        case .bool(true): return true
        case .object(let members): return members.allSatisfy { annotations.contains($0.key) }
        default: return false
        }
    }

    /// The schema both `a` and `b` hold for; nil when none can (the result keeps `a`'s path).
    mutating func mergeValues(_ a: JSONValue, _ b: JSONValue, at path: String) throws -> JSONValue {
        if Self.isTrivial(a) { return b }
        if Self.isTrivial(b) { return a }
        if a == .bool(false) || b == .bool(false) { return .bool(false) }
        if a == b { return a }
        guard let x = try resolved(a, at: path), let y = try resolved(b, at: path), let m = try merge(x, y, at: path) else { return .bool(false) }
        return .object(m.members)
    }

    /// One schema object for two that both hold (neither has `$ref` or `allOf` left); nil when no
    /// value can satisfy both. Keywords that cannot be combined are refused.
    mutating func merge(_ a: SchemaObject, _ b: SchemaObject, at path: String) throws -> SchemaObject? {
        func refuse(_ key: String) -> HearthError {
            HearthError.invalidArgument("The JSON schema at \(path): two schemas that must both hold (allOf, or keywords beside $ref or anyOf) both set \"\(key)\" in ways that cannot be merged; write the combined schema out.")
        }
        var out: [(key: String, value: JSONValue)] = []
        var keys: [String] = []
        for key in a.members.map(\.key) + b.members.map(\.key) where !keys.contains(key) { keys.append(key) }
        for key in keys where !Self.annotations.contains(key) && !Self.objectKeywords.contains(key) && key != "enum" && key != "const" {
            guard let x = a[key] else { out.append((key, b[key]!)); continue }
            guard let y = b[key] else { out.append((key, x)); continue }
            if x == y { out.append((key, x)); continue }
            switch key {
            case "type":
                // A number may be an integer: number with integer leaves integer.
                func widened(_ t: JSONTypes) -> JSONTypes { t.contains(.number) ? t.union(.integer) : t }
                let shared = widened(try types(of: SchemaObject(members: [("type", x)], path: path)))
                    .intersection(widened(try types(of: SchemaObject(members: [("type", y)], path: path))))
                let names = JSONTypes.names.filter { shared.contains($0.1) && !($0.1 == .integer && shared.contains(.number)) }
                guard !names.isEmpty else {
                    throw HearthError.invalidArgument("The JSON schema at \(path): the schemas that must both hold have no type in common (\(x.jsonText) and \(y.jsonText)).")
                }
                out.append((key, .array(names.map { .string($0.0) })))
            case "minimum", "minLength", "minItems", "exclusiveMinimum":
                guard let p = x.numberValue, let q = y.numberValue else { throw refuse(key) }
                out.append((key, .number(max(p, q))))
            case "maximum", "maxLength", "maxItems", "exclusiveMaximum":
                guard let p = x.numberValue, let q = y.numberValue else { throw refuse(key) }
                out.append((key, .number(min(p, q))))
            case "items", "additionalItems":
                out.append((key, try mergeValues(x, y, at: "\(path)/\(key)")))
            default:
                // pattern, format, prefixItems, anyOf, oneOf… that differ.
                throw refuse(key)
            }
        }
        // Values both allow.
        func values(_ s: SchemaObject) throws -> [JSONValue]? {
            if let c = s["const"] { return [c] }
            guard let e = s["enum"] else { return nil }
            guard case .array(let list) = e else { throw s.error("enum must be an array") }
            return list
        }
        let valuesA = try values(a), valuesB = try values(b)
        switch (valuesA, valuesB) {
        case (let x?, let y?):
            let both = x.filter { y.contains($0) }
            guard !both.isEmpty else {
                throw HearthError.invalidArgument("The JSON schema at \(path): the schemas that must both hold have no enum or const value in common.")
            }
            out.append(("enum", .array(both)))
        case (let x?, nil), (nil, let x?): out.append(("enum", .array(x)))
        case (nil, nil): break
        }
        out += try mergeObjectKeywords(a, b, at: path)
        return SchemaObject(members: out, path: a.path)
    }

    /// `properties`, `required` and `additionalProperties` of two object schemas that both hold:
    /// a property one declares and the other does not is held to the other's
    /// `additionalProperties` too.
    mutating func mergeObjectKeywords(_ a: SchemaObject, _ b: SchemaObject, at path: String) throws -> [(key: String, value: JSONValue)] {
        guard !Set(a.members.map(\.key) + b.members.map(\.key)).isDisjoint(with: Self.objectKeywords) else { return [] }
        func properties(_ s: SchemaObject) throws -> [(key: String, value: JSONValue)] {
            guard let p = s["properties"] else { return [] }
            guard case .object(let members) = p else { throw s.error("properties must be an object") }
            return members
        }
        let pa = try properties(a), pb = try properties(b)
        // What each side says of a property it does not declare: nil nothing, else a schema.
        func beyond(_ s: SchemaObject) -> JSONValue? {
            switch s["additionalProperties"] {
            case nil, .bool(true)?: return nil
            case let v?: return v
            }
        }
        var names: [String] = []
        for name in pa.map(\.key) + pb.map(\.key) where !names.contains(name) { names.append(name) }
        var merged: [(key: String, value: JSONValue)] = []
        for name in names {
            let x = pa.last { $0.key == name }?.value ?? beyond(a)
            let y = pb.last { $0.key == name }?.value ?? beyond(b)
            let value: JSONValue
            switch (x, y) {
            case (let x?, let y?): value = try mergeValues(x, y, at: "\(path)/properties/\(Self.pointerToken(name))")
            case (let x?, nil): value = x
            case (nil, let y?): value = y
            case (nil, nil): value = .bool(true)
            }
            merged.append((name, value))
        }
        var out: [(key: String, value: JSONValue)] = []
        if !merged.isEmpty { out.append(("properties", .object(merged))) }
        var required: [JSONValue] = []
        for s in [a, b] {
            if let r = s["required"] {
                guard case .array(let list) = r else { throw s.error("required must be an array of property names") }
                for name in list where !required.contains(name) { required.append(name) }
            }
        }
        if !required.isEmpty { out.append(("required", .array(required))) }
        switch (a["additionalProperties"], b["additionalProperties"]) {
        case (nil, nil): break
        case (let x?, nil), (nil, let x?): out.append(("additionalProperties", x))
        case (let x?, let y?): out.append(("additionalProperties", try mergeValues(x, y, at: "\(path)/additionalProperties")))
        }
        return out
    }
}
