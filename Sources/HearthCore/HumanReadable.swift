import Foundation

/// Quantities written for people, in the errors, the inspector and the tool's progress lines.
public enum HumanReadable {
    /// A byte count in binary units with one decimal: `93.8 MiB`; whole bytes below 1 KiB.
    public static func bytes(_ bytes: Int) -> String {
        scaled(bytes, base: 1024, units: ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], separator: " ")
    }

    /// A count in decimal units with one decimal: `134.5M`, `7.2B`; exact below 1,000.
    public static func count(_ count: Int) -> String {
        scaled(count, base: 1000, units: ["", "K", "M", "B", "T"], separator: "")
    }

    /// `value` in the largest of `units` (each `base` times the one before) that keeps it at
    /// least 1, with one decimal; exact in the first unit.
    private static func scaled(_ value: Int, base: Int, units: [String], separator: String) -> String {
        guard value >= base else { return "\(value)" + separator + units[0] }
        var scaled = Double(value) / Double(base)
        var unit = 1
        // A value that one decimal would round up to `base` is written in the next unit.
        while scaled >= Double(base) - 0.05, unit < units.count - 1 {
            scaled /= Double(base)
            unit += 1
        }
        return String(format: "%.1f", scaled) + separator + units[unit]
    }
}
