package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// stream writes server-sent events; every write is flushed and bounded by
// writeTimeout so that a stalled client cannot hold a handler forever.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startStream(w http.ResponseWriter) *stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &stream{w: w, rc: http.NewResponseController(w)}
}

// event sends one event; a string payload is sent as one data line, each of
// its line breaks (CRLF, CR or LF: all end a line of an event stream) made a
// space, anything else as JSON. A string such as a server's stderr line
// therefore cannot end its data line and add fields or events of its own.
func (s *stream) event(kind string, v any) error {
	var data string
	if str, ok := v.(string); ok {
		data = lineBreaks.Replace(str)
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", kind, err)
		}
		data = string(b)
	}
	return s.write("event: " + kind + "\ndata: " + data + "\n\n")
}

func (s *stream) comment(text string) error { return s.write(": " + text + "\n\n") }

func (s *stream) write(text string) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// sseReader parses a text/event-stream.
type sseReader struct {
	r *bufio.Reader
}

// next returns the next event, skipping comments; io.EOF at the end.
func (s *sseReader) next() (Event, error) {
	var ev Event
	var data []string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return Event{}, io.EOF
			}
			if err != io.EOF {
				return Event{}, err
			}
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Kind == "" && data == nil {
				if err == io.EOF {
					return Event{}, io.EOF
				}
				continue
			}
			if ev.Kind == "" {
				ev.Kind = "message"
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			ev.Kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		if err == io.EOF {
			return Event{}, io.ErrUnexpectedEOF
		}
	}
}
