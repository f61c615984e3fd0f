/// Wraps a value the compiler cannot prove Sendable when the code guarantees it is used on one thread at a time.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    package var value: Value
    package init(_ value: Value) { self.value = value }
}
