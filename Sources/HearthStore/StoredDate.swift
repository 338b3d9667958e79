import Foundation

/// Dates as whole milliseconds since 1970, the precision the database keeps.
///
/// Every date the store hands out is made by `date(milliseconds:)`, including the ones it has
/// only just written, so a value returned by a write equals the same value read back later.
package enum StoredDate {
    /// The current time, cut to the millisecond.
    package static func now() -> Date {
        date(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    package static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
