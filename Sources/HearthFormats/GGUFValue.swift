/// A metadata value in a GGUF file.
public enum GGUFValue: Sendable, Equatable {
    case uint8(UInt8)
    case int8(Int8)
    case uint16(UInt16)
    case int16(Int16)
    case uint32(UInt32)
    case int32(Int32)
    case float32(Float)
    case bool(Bool)
    case string(String)
    case array([GGUFValue])
    case uint64(UInt64)
    case int64(Int64)
    case float64(Double)

    /// The type numbers GGUF stores before each value.
    public enum Kind: UInt32, Sendable, CaseIterable {
        case uint8 = 0, int8, uint16, int16, uint32, int32, float32, bool, string, array, uint64, int64, float64

        /// Size of one value of this kind, for fixed-size kinds.
        public var fixedSize: Int? {
            switch self {
            case .uint8, .int8, .bool: return 1
            case .uint16, .int16: return 2
            case .uint32, .int32, .float32: return 4
            case .uint64, .int64, .float64: return 8
            case .string, .array: return nil
            }
        }

        /// Fewest bytes a value of this kind can take in a file.
        var minimumSize: Int { fixedSize ?? 8 }
    }

    /// The kind of this value.
    public var kind: Kind {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .float32: return .float32
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        case .uint64: return .uint64
        case .int64: return .int64
        case .float64: return .float64
        }
    }

    /// The value as an `Int` when it is an integer that fits.
    public var intValue: Int? {
        switch self {
        case .uint8(let v): return Int(v)
        case .int8(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint64(let v): return Int(exactly: v)
        case .int64(let v): return Int(exactly: v)
        default: return nil
        }
    }

    /// The value as a `Double` when it is a number.
    public var doubleValue: Double? {
        switch self {
        case .float32(let v): return Double(v)
        case .float64(let v): return v
        default: return intValue.map(Double.init)
        }
    }

    /// The value when it is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value when it is a bool.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements when the value is an array.
    public var arrayValue: [GGUFValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}
