package feeds_test

import (
	"fmt"

	"github.com/feedworker/feedworker/feeds"
)

func ExampleParse() {
	// ISO-8859-1 declared in the document, with a stray control character.
	body := []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n" +
		"<rss version=\"2.0\"><channel><title>Caf\xe9\x01</title><ttl>60</ttl>" +
		"<item><title>Cr\xe8me br\xfbl\xe9e</title><guid>1</guid></item></channel></rss>")
	feed, err := feeds.Parse(body, "application/rss+xml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(feed.Title, "|", feed.Items[0].Title)

	_, err = feeds.Parse([]byte("<!DOCTYPE html><html><body>Moved</body></html>"), "text/html")
	fmt.Println(err, "|", feeds.Class(err))
	// Output:
	// Café | Crème brûlée
	// parse feed: document is HTML, not a feed | error_parse
}
