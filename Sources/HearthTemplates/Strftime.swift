import Foundation

/// C's `strftime` in the C locale, as Python's `datetime.strftime` on Linux formats dates
/// (including glibc's `%-d`-style flag that drops padding).
enum Strftime {
    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                                 "October", "November", "December"]

    static func format(_ pattern: String, date: Date, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday, .nanosecond], from: date)
        let year = c.year!, month = c.month!, day = c.day!, hour = c.hour!, minute = c.minute!, second = c.second!
        let weekday = c.weekday! - 1
        let dayOfYear = calendar.ordinality(of: .day, in: .year, for: date) ?? 1
        func pad(_ n: Int, _ width: Int, _ fill: Character = "0") -> String {
            let s = String(n)
            return String(repeating: fill, count: max(0, width - s.count)) + s
        }
        var result = ""
        var scalars = pattern.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "%", let next = scalars.first else {
                result.unicodeScalars.append(scalar)
                continue
            }
            scalars.removeFirst()
            var noPadding = false
            var conversion = next
            if next == "-", let after = scalars.popFirst() {
                noPadding = true
                conversion = after
            }
            func number(_ n: Int, _ width: Int) -> String { noPadding ? String(n) : pad(n, width) }
            switch conversion {
            case "d": result += number(day, 2)
            case "e": result += noPadding ? String(day) : pad(day, 2, " ")
            case "m": result += number(month, 2)
            case "Y": result += String(year)
            case "y": result += number(year % 100, 2)
            case "H": result += number(hour, 2)
            case "I": result += number(hour % 12 == 0 ? 12 : hour % 12, 2)
            case "M": result += number(minute, 2)
            case "S": result += number(second, 2)
            case "p": result += hour < 12 ? "AM" : "PM"
            case "j": result += number(dayOfYear, 3)
            case "f": result += pad((c.nanosecond ?? 0) / 1000, 6)
            case "a": result += String(weekdays[weekday].prefix(3))
            case "A": result += weekdays[weekday]
            case "b", "h": result += String(months[month - 1].prefix(3))
            case "B": result += months[month - 1]
            case "w": result += String(weekday)
            case "u": result += String(weekday == 0 ? 7 : weekday)
            case "F": result += "\(year)-\(pad(month, 2))-\(pad(day, 2))"
            case "D": result += "\(pad(month, 2))/\(pad(day, 2))/\(pad(year % 100, 2))"
            case "T": result += "\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
            case "R": result += "\(pad(hour, 2)):\(pad(minute, 2))"
            case "n": result += "\n"
            case "t": result += "\t"
            case "%": result += "%"
            default:
                result += "%" + (noPadding ? "-" : "") + String(conversion)
            }
        }
        return result
    }
}
