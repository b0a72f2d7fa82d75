;; The JSON scanner's fast path (json-scan-wasm.ts loads it; `npm run build:wasm` assembles this
;; file into json-scan.wasm, and test/eras/json-scan-wasm.test.ts checks that the two agree).
;;
;; One loop over the bytes through the grammar's table (json-grammar.ts, written into this
;; memory at offset 0 when the module loads): GRAMMAR[state << 8 | byte] is the next state (>= 0)
;; or an action (< 0), carried out below. The same checks as json-scan.ts's skipValue: valid JSON
;; (RFC 8259), nested no deeper than 64, and those `checks` asks for (json-scan.ts, KEYS = 1 and
;; EXACT_NUMBERS = 2; it is 0 to 3): no key twice in an object and none spelled with an escape;
;; no number JSON.parse reads otherwise than an exact reader would (an exponent, more than 15
;; characters). The table also checks UTF-8 in strings (the only place a byte past ASCII may
;; be), so what passes is valid UTF-8 too.
;;
;; Memory (bytes):
;;       0  the grammar table, 256 entries a state
;;   10240  open kinds: one byte a depth (1 an object, 0 an array)
;;   10368  open key bases: an i32 a depth (where the object's keys begin on the key stack)
;;   10752  the key stack: (start, end) i32 pairs of the open objects' keys, 16 an object
;;   19456  `"resultType"`, the key an answer's result may not have of its own (the data below)
;;   19520  the fixed bytes of a JSON-RPC answer as SDKs spell it (the data below)
;;   19600  the id of the request an answer is checked for (ASCII, 880 bytes at most), written by json-scan-wasm.ts
;;   20480  the bytes scanned (INPUT), copied in by json-scan-wasm.ts
;;
;; Results: an index just past the value; -1 when the bytes are refused; -2 when this path does
;; not decide (an object with more than 16 keys, compared by the caller's general path).
(module
  (memory (export "memory") 1)
  ;; An answer as SDKs write it, with no space: `{"jsonrpc":"2.0","id":<id>,"result":{...}}`
  ;; (Python's, and most) or `{"result":{...},"jsonrpc":"2.0","id":<id>}` (the TypeScript SDK's).
  (data (i32.const 19456) "\"resultType\"")                ;; 12 bytes
  (data (i32.const 19520) "{\"jsonrpc\":\"2.0\",\"id\":")  ;; 22
  (data (i32.const 19544) ",\"result\":")                   ;; 10
  (data (i32.const 19556) "{\"result\":")                   ;; 10
  (data (i32.const 19568) ",\"jsonrpc\":\"2.0\",\"id\":")  ;; 22

  ;; Whether the `length` bytes at `at` (ending by `end`) are those at `expected`.
  (func $bytesAre (param $at i32) (param $end i32) (param $expected i32) (param $length i32) (result i32)
    (local $j i32)
    (if (i32.gt_u (i32.add (local.get $at) (local.get $length)) (local.get $end)) (then (return (i32.const 0))))
    (block $differs
      (loop $byte
        (if (i32.ge_u (local.get $j) (local.get $length)) (then (return (i32.const 1))))
        (br_if $differs
          (i32.ne (i32.load8_u (i32.add (local.get $at) (local.get $j)))
                  (i32.load8_u (i32.add (local.get $expected) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $byte)))
    (i32.const 0))

  ;; Whether `at` holds the answer's last brace, and only white space follows it to `end`.
  (func $closes (param $at i32) (param $end i32) (result i32)
    (local $c i32)
    (if (i32.ge_u (local.get $at) (local.get $end)) (then (return (i32.const 0))))
    (if (i32.ne (i32.load8_u (local.get $at)) (i32.const 0x7d)) (then (return (i32.const 0))))
    (local.set $at (i32.add (local.get $at) (i32.const 1)))
    (block $done
      (loop $space
        (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $at)))
        (if (i32.eqz (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x0a)))
                             (i32.or (i32.eq (local.get $c) (i32.const 0x0d)) (i32.eq (local.get $c) (i32.const 0x09)))))
          (then (return (i32.const 0))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $space)))
    (i32.const 1))

  ;; The answer of `length` bytes at INPUT, in one of the two spellings above, for the request
  ;; whose id is the `idLength` bytes at 19600: where its result's members begin (just after its
  ;; `{`); -1 when its result is not a plain one (not an object, one with its own resultType, a
  ;; key twice or escaped anywhere in it: answer-bytes.ts); -2 for anything else (another
  ;; spelling, id or key, bytes after it, a result of many keys), which the caller reads its
  ;; general way.
  (func (export "spelledResult") (param $length i32) (param $idLength i32) (result i32)
    (local $end i32) (local $i i32) (local $resultAt i32) (local $resultEnd i32)
    (local.set $end (i32.add (i32.const 20480) (local.get $length)))
    (if (call $bytesAre (i32.const 20480) (local.get $end) (i32.const 19520) (i32.const 22))
      (then
        (local.set $i (i32.const 20502))
        (if (i32.eqz (call $bytesAre (local.get $i) (local.get $end) (i32.const 19600) (local.get $idLength))) (then (return (i32.const -2))))
        (local.set $i (i32.add (local.get $i) (local.get $idLength)))
        (if (i32.eqz (call $bytesAre (local.get $i) (local.get $end) (i32.const 19544) (i32.const 10))) (then (return (i32.const -2))))
        (local.set $resultAt (i32.add (local.get $i) (i32.const 10)))
        (if (i32.ge_u (local.get $resultAt) (local.get $end)) (then (return (i32.const -2))))
        (if (i32.ne (i32.load8_u (local.get $resultAt)) (i32.const 0x7b)) (then (return (i32.const -2)))) ;; not `{` at once: the general way
        (local.set $resultEnd (call $skip (local.get $resultAt) (local.get $end) (i32.const 1) (i32.const 1) (i32.const 12)))
        (if (i32.eq (local.get $resultEnd) (i32.const -2)) (then (return (i32.const -2))))
        (if (i32.lt_s (local.get $resultEnd) (i32.const 0)) (then (return (i32.const -1))))
        (return (select (i32.add (local.get $resultAt) (i32.const 1)) (i32.const -2) (call $closes (local.get $resultEnd) (local.get $end))))))
    (if (call $bytesAre (i32.const 20480) (local.get $end) (i32.const 19556) (i32.const 10))
      (then
        (local.set $resultAt (i32.const 20490))
        (if (i32.ge_u (local.get $resultAt) (local.get $end)) (then (return (i32.const -2))))
        (if (i32.ne (i32.load8_u (local.get $resultAt)) (i32.const 0x7b)) (then (return (i32.const -2)))) ;; not `{` at once: the general way
        (local.set $resultEnd (call $skip (local.get $resultAt) (local.get $end) (i32.const 1) (i32.const 1) (i32.const 12)))
        (if (i32.eq (local.get $resultEnd) (i32.const -2)) (then (return (i32.const -2))))
        (if (i32.lt_s (local.get $resultEnd) (i32.const 0)) (then (return (i32.const -1))))
        (if (i32.eqz (call $bytesAre (local.get $resultEnd) (local.get $end) (i32.const 19568) (i32.const 22))) (then (return (i32.const -2))))
        (local.set $i (i32.add (local.get $resultEnd) (i32.const 22)))
        (if (i32.eqz (call $bytesAre (local.get $i) (local.get $end) (i32.const 19600) (local.get $idLength))) (then (return (i32.const -2))))
        (return (select (i32.add (local.get $resultAt) (i32.const 1)) (i32.const -2)
          (call $closes (i32.add (local.get $i) (local.get $idLength)) (local.get $end))))))
    (i32.const -2))

  ;; Index just past the JSON value starting at `i` (white space before it allowed), scanning to
  ;; `end` at most, inside `depth` containers, with `checks` (above); see the results above. With
  ;; the keys checked (plain, so equal bytes are equal keys), `refuse` = 12 refuses the value (-1)
  ;; when it is an object with `"resultType"` (the 12 bytes at 19456) among its own keys; 0 does not.
  (func $skip (export "skip") (param $i i32) (param $end i32) (param $depth i32) (param $checks i32) (param $refuse i32) (result i32)
    (local $outer i32) (local $state i32) (local $next i32) (local $top i32) (local $keyAt i32) (local $numberAt i32) (local $c i32)
    (local $base i32) (local $length i32) (local $k i32) (local $start i32) (local $j i32)
    (local.set $outer (local.get $depth))
    (local.set $keyAt (i32.const -1))
    (block $ended
      (loop $byte
        ;; The bytes that only move the state, in a loop of their own (the compiler keeps its
        ;; few values in registers there).
        (block $action
          (loop $plain
            (br_if $ended (i32.ge_u (local.get $i) (local.get $end)))
            (local.set $next
              (i32.load8_s (i32.or (i32.shl (local.get $state) (i32.const 8)) (i32.load8_u (local.get $i)))))
            (br_if $action (i32.lt_s (local.get $next) (i32.const 0)))
            (local.set $state (local.get $next))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $plain)))
        ;; An action: -1 - next is its index in the table below (json-grammar.ts, Act).
        (block $wordEnd
        (block $exponentMark
        (block $numberEnd
        (block $numberStart
        (block $closeArray
        (block $closeObject
        (block $openArray
        (block $openObject
        (block $comma
        (block $backslash
        (block $stringEnd
        (block $keyStart
        (block $error
          (br_table $error $keyStart $stringEnd $backslash $comma $openObject $openArray
                    $closeObject $closeArray $numberStart $numberEnd $exponentMark $wordEnd $error
            (i32.sub (i32.const -1) (local.get $next))))
        ;; Error: not JSON
        (return (i32.const -1)))
        ;; KeyStart: a key's opening quote
        (local.set $keyAt (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $state (i32.const 6)) ;; InString
        (br $byte))
        ;; StringEnd: a key's or a value's closing quote
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.eq (local.get $keyAt) (i32.const -1))
          (then
            (if (i32.eq (local.get $depth) (local.get $outer)) (then (return (local.get $i))))
            (local.set $state (i32.const 1))) ;; AfterValue
          (else
            (if (i32.and (local.get $checks) (i32.const 1))
              (then
                ;; The key is new in its object: no key on the stack from the object's base has
                ;; its bytes (plain keys: equal bytes are equal keys). Written here rather than
                ;; called: a call makes the compiler save the loop's values around it.
                (local.set $base (i32.load (i32.add (i32.const 10368) (i32.shl (local.get $depth) (i32.const 2)))))
                (if (i32.ge_u (i32.sub (local.get $top) (local.get $base)) (i32.const 32)) (then (return (i32.const -2))))
                (local.set $length (i32.sub (local.get $i) (local.get $keyAt)))
                (local.set $k (local.get $base))
                (block $new
                  (loop $each
                    (br_if $new (i32.ge_u (local.get $k) (local.get $top)))
                    (local.set $start (i32.load (i32.add (i32.const 10752) (i32.shl (local.get $k) (i32.const 2)))))
                    (if (i32.eq
                          (i32.sub (i32.load (i32.add (i32.const 10756) (i32.shl (local.get $k) (i32.const 2)))) (local.get $start))
                          (local.get $length))
                      (then
                        ;; both open with a quote: compare from the second byte
                        (local.set $j (i32.const 1))
                        (block $differs
                          (loop $compare
                            (if (i32.ge_u (local.get $j) (local.get $length)) (then (return (i32.const -1))))
                            (br_if $differs
                              (i32.ne (i32.load8_u (i32.add (local.get $start) (local.get $j)))
                                      (i32.load8_u (i32.add (local.get $keyAt) (local.get $j)))))
                            (local.set $j (i32.add (local.get $j) (i32.const 1)))
                            (br $compare)))))
                    (local.set $k (i32.add (local.get $k) (i32.const 2)))
                    (br $each)))
                (i32.store (i32.add (i32.const 10752) (i32.shl (local.get $top) (i32.const 2))) (local.get $keyAt))
                (i32.store (i32.add (i32.const 10756) (i32.shl (local.get $top) (i32.const 2))) (local.get $i))
                (local.set $top (i32.add (local.get $top) (i32.const 2)))
                ;; The refused key, among the value's own (`refuse` bytes at 19456), refuses it.
                (if (i32.and (i32.eq (local.get $length) (local.get $refuse)) (i32.eq (local.get $depth) (i32.add (local.get $outer) (i32.const 1))))
                  (then
                    (local.set $j (i32.const 0))
                    (block $other
                      (loop $compare
                        (if (i32.ge_u (local.get $j) (local.get $length)) (then (return (i32.const -1))))
                        (br_if $other
                          (i32.ne (i32.load8_u (i32.add (i32.const 19456) (local.get $j)))
                                  (i32.load8_u (i32.add (local.get $keyAt) (local.get $j)))))
                        (local.set $j (i32.add (local.get $j) (i32.const 1)))
                        (br $compare)))))))
            (local.set $keyAt (i32.const -1))
            (local.set $state (i32.const 4)))) ;; Colon
        (br $byte))
        ;; Backslash in a string: a key spelled with an escape may spell another key
        (if (i32.and (i32.and (local.get $checks) (i32.const 1)) (i32.ne (local.get $keyAt) (i32.const -1))) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $state (i32.const 7)) ;; Escape
        (br $byte))
        ;; Comma: a key next in an object, a value in an array
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $state
          (select (i32.const 3) (i32.const 0) (i32.load8_u (i32.add (i32.const 10240) (local.get $depth))))) ;; Key : Value
        (br $byte))
        ;; OpenObject
        (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
        (if (i32.gt_u (local.get $depth) (i32.const 64)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (i32.store8 (i32.add (i32.const 10240) (local.get $depth)) (i32.const 1))
        (i32.store (i32.add (i32.const 10368) (i32.shl (local.get $depth) (i32.const 2))) (local.get $top))
        (local.set $state (i32.const 2)) ;; ObjectStart
        (br $byte))
        ;; OpenArray
        (local.set $depth (i32.add (local.get $depth) (i32.const 1)))
        (if (i32.gt_u (local.get $depth) (i32.const 64)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (i32.store8 (i32.add (i32.const 10240) (local.get $depth)) (i32.const 0))
        (i32.store (i32.add (i32.const 10368) (i32.shl (local.get $depth) (i32.const 2))) (local.get $top))
        (local.set $state (i32.const 5)) ;; ArrayStart
        (br $byte))
        ;; CloseObject: only an object's
        (if (i32.ne (i32.load8_u (i32.add (i32.const 10240) (local.get $depth))) (i32.const 1)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $top (i32.load (i32.add (i32.const 10368) (i32.shl (local.get $depth) (i32.const 2)))))
        (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
        (if (i32.eq (local.get $depth) (local.get $outer)) (then (return (local.get $i))))
        (local.set $state (i32.const 1)) ;; AfterValue
        (br $byte))
        ;; CloseArray: only an array's
        (if (i32.ne (i32.load8_u (i32.add (i32.const 10240) (local.get $depth))) (i32.const 0)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $top (i32.load (i32.add (i32.const 10368) (i32.shl (local.get $depth) (i32.const 2)))))
        (local.set $depth (i32.sub (local.get $depth) (i32.const 1)))
        (if (i32.eq (local.get $depth) (local.get $outer)) (then (return (local.get $i))))
        (local.set $state (i32.const 1)) ;; AfterValue
        (br $byte))
        ;; NumberStart: `-` or a digit
        (local.set $c (i32.load8_u (local.get $i)))
        (local.set $numberAt (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $state
          (select (i32.const 12) ;; Minus
            (select (i32.const 13) (i32.const 14) (i32.eq (local.get $c) (i32.const 0x30))) ;; Zero : Integer
            (i32.eq (local.get $c) (i32.const 0x2d))))
        (br $byte))
        ;; NumberEnd: the number ended before this byte, which is read again from AfterValue
        (if (i32.and (i32.shr_u (local.get $checks) (i32.const 1)) (i32.gt_u (i32.sub (local.get $i) (local.get $numberAt)) (i32.const 15)))
          (then (return (i32.const -1))))
        (if (i32.eq (local.get $depth) (local.get $outer)) (then (return (local.get $i))))
        (local.set $state (i32.const 1)) ;; AfterValue
        (br $byte))
        ;; ExponentMark: `e` or `E` in a number
        (if (i32.and (local.get $checks) (i32.const 2)) (then (return (i32.const -1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $state (i32.const 17)) ;; Exponent
        (br $byte))
        ;; WordEnd: the last letter of true, false or null
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (if (i32.eq (local.get $depth) (local.get $outer)) (then (return (local.get $i))))
        (local.set $state (i32.const 1)) ;; AfterValue
        (br $byte)))
    ;; The bytes ended: only a number, at the outer depth, may end with them.
    (if (i32.ne (local.get $depth) (local.get $outer)) (then (return (i32.const -1))))
    (if (i32.eqz
          (i32.or (i32.or (i32.eq (local.get $state) (i32.const 13)) (i32.eq (local.get $state) (i32.const 14)))
                  (i32.or (i32.eq (local.get $state) (i32.const 16)) (i32.eq (local.get $state) (i32.const 19)))))
      (then (return (i32.const -1))))
    (if (i32.and (i32.shr_u (local.get $checks) (i32.const 1)) (i32.gt_u (i32.sub (local.get $end) (local.get $numberAt)) (i32.const 15)))
      (then (return (i32.const -1))))
    (local.get $end))

  ;; Whether the `length` bytes at INPUT are one JSON value, white space around it allowed, that
  ;; every reader reads alike (skip with both checks): 1 or 0, or -2 when this path does not decide.
  (func (export "readAlike") (param $length i32) (result i32)
    (local $at i32) (local $end i32) (local $c i32)
    (local.set $end (i32.add (i32.const 20480) (local.get $length)))
    (local.set $at (call $skip (i32.const 20480) (local.get $end) (i32.const 0) (i32.const 3) (i32.const 0)))
    (if (i32.lt_s (local.get $at) (i32.const 0))
      (then (return (select (i32.const -2) (i32.const 0) (i32.eq (local.get $at) (i32.const -2))))))
    (block $done
      (loop $space
        (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $at)))
        (if (i32.eqz (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x0a)))
                             (i32.or (i32.eq (local.get $c) (i32.const 0x0d)) (i32.eq (local.get $c) (i32.const 0x09)))))
          (then (return (i32.const 0))))
        (local.set $at (i32.add (local.get $at) (i32.const 1)))
        (br $space)))
    (i32.const 1))
)
