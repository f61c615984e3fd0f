import Testing

@testable import HTTPWire

/// The one-pass scan of a common field line (``HTTP1Grammar/scanCommonFieldLine(_:from:)``) accepts only lines the
/// general path accepts, with the same field, and the reader decides every line the same however its bytes arrive.
@Suite struct HTTP1FieldLineScanTests {
    /// Lines with every byte at each place of a field line: in the name, before and after the colon, at the value's
    /// start, middle and end, and in place of the CR and of the LF.
    private static var lines: [[UInt8]] {
        var lines: [[UInt8]] = [
            bytes("A: b\r\n"), bytes("Content-Length: 5\r\n"), bytes("X:\r\n"), bytes("X: \r\n"), bytes("X:  v  \r\n"),
            bytes("X:\tv\r\n"), bytes("X: v\t\r\n"), bytes("X-Long-Field-Name-Here: a somewhat longer value, ok\r\n"),
            bytes("\r\n"), bytes(": v\r\n"), bytes("X : v\r\n"), bytes(" X: v\r\n"), bytes("X: v\r"), bytes("X: v"),
            bytes("X: v\n"), bytes("X: v\r\r\n"), bytes("X: a\rb\r\n")
        ]
        for value in 0...255 {
            let byte = UInt8(value)
            lines.append([byte] + bytes("-Name: value\r\n"))
            lines.append(bytes("X-N") + [byte] + bytes("me: value\r\n"))
            lines.append(bytes("X-Name") + [byte] + bytes(": value\r\n"))
            lines.append(bytes("X-Name:") + [byte] + bytes("value\r\n"))
            lines.append(bytes("X-Name: ") + [byte] + bytes("alue that runs past a word\r\n"))
            lines.append(bytes("X-Name: val") + [byte] + bytes("e\r\n"))
            lines.append(bytes("X-Name: a value that runs past two words ") + [byte] + bytes("\r\n"))
            lines.append(bytes("X-Name: value") + [byte] + bytes("\n"))
            lines.append(bytes("X-Name: value\r") + [byte])
        }
        return lines
    }

    @Test func theScanAcceptsOnlyWhatTheGeneralPathAcceptsAlike() {
        var accepted = 0
        for line in Self.lines {
            for trailer in [[], bytes("Next: x\r\n\r\n")] {
                let input = line + trailer
                input.withUnsafeBytes { buffer in
                    guard let (field, length) = HTTP1Grammar.scanCommonFieldLine(buffer, from: 0) else { return }
                    accepted += 1
                    // The general path: the first LF ends the line, which must end in CR LF and parse the same.
                    guard let lf = input.firstIndex(of: HTTP1Grammar.lf) else {
                        Issue.record("accepted without an LF: \(line)")
                        return
                    }
                    #expect(lf + 1 == length, "\(line)")
                    #expect(lf > 0 && input[lf - 1] == HTTP1Grammar.cr, "\(line)")
                    let general = try? HTTP1Grammar.parseFieldLineBytes(
                        UnsafeRawBufferPointer(rebasing: buffer[0..<(lf - 1)])
                    ).get()
                    #expect(general?.nameCount == field.nameCount, "\(line)")
                    #expect(general?.valueStart == field.valueStart, "\(line)")
                    #expect(general?.valueEnd == field.valueEnd, "\(line)")
                    #expect(general?.token == field.token, "\(line)")
                    #expect(general?.hadTrailingWhitespace == field.hadTrailingWhitespace, "\(line)")
                }
            }
        }
        // The common lines are taken by the scan (each of the first eight lines, and most of the generated ones).
        #expect(accepted > 1000)
        for line in Self.lines.prefix(8) where line != bytes("X:\tv\r\n") && line != bytes("X: v\t\r\n") {
            #expect(line.withUnsafeBytes { HTTP1Grammar.scanCommonFieldLine($0, from: 0) } != nil, "\(line)")
        }
    }

    /// A request holding each line parses the same whole (the one-pass scan) and a byte at a time (the general path
    /// only: a line is never complete when first looked at).
    @Test func aRequestParsesTheSameWholeAndByteByByte() {
        for line in Self.lines {
            let input = bytes("GET / HTTP/1.1\r\n" + hostLine) + line + bytes("\r\n")
            #expect(requestEvents(input) == requestEvents(input, sizes: [1]), "\(line)")
        }
    }
}
