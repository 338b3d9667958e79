import Foundation

/// Quantities written for people, in the errors, the inspector and the tool's progress lines.
public enum HumanReadable {
    /// A byte count in binary units with one decimal: `93.8 MiB`; whole bytes below 1 KiB.
    public static func bytes(_ bytes: Int) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1023.95, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }
}
