package ptyinput_test

import (
	"errors"
	"fmt"

	"github.com/termverify/termverify-sandbox/ptyinput"
)

func ExampleEncodeKey() {
	up := []string{"ArrowUp"}
	normal, _ := ptyinput.EncodeKey(up, ptyinput.Modes{})
	app, _ := ptyinput.EncodeKey(up, ptyinput.Modes{AppCursor: true}) // after smkx
	_, err := ptyinput.EncodeKey([]string{"Control", "Enter"}, ptyinput.Modes{})
	fmt.Printf("%q %q %v\n", normal, app, errors.Is(err, ptyinput.ErrUnencodable))
	// Output:
	// "\x1b[A" "\x1bOA" true
}

func ExampleEncodeText() {
	// A command and its Enter (CR) in one text; LF would be Control+j.
	fmt.Printf("%q\n", ptyinput.EncodeText(":wq\r"))
	fmt.Printf("%q\n", ptyinput.EncodeText("a\nb"))
	// Output:
	// ":wq\r"
	// "a\nb"
}

func ExampleEncodeMouse() {
	ev := ptyinput.MouseEvent{Action: "press", Button: "left", Column: 0, Row: 4}
	b, _ := ptyinput.EncodeMouse(ev, ptyinput.Modes{Mouse: ptyinput.MouseNormal, MouseEncoding: ptyinput.MouseEncodingSGR})
	_, err := ptyinput.EncodeMouse(ev, ptyinput.Modes{})
	fmt.Printf("%q %v\n", b, errors.Is(err, ptyinput.ErrMouseNotEnabled))
	// Output:
	// "\x1b[<0;1;5M" true
}
