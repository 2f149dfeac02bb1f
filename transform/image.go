package transform

import (
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/mmcdole/gofeed"
	ext "github.com/mmcdole/gofeed/extensions"
)

// pickImage returns the item's picture, absolute http(s), from the first
// source that has one: an image enclosure, the largest Media RSS image or
// thumbnail, itunes:image, gofeed's own pick (unless the content showed it
// to be a tracking pixel or an icon), the first sizeable <img> of the body,
// then of the description. gofeedImg is gofeed's pick: Item.Image, or for
// RSS the one gofeed would have found in the HTML (itemData.gofeedImage).
func pickImage(item *gofeed.Item, gofeedImg *gofeed.Image, body, desc func() *content, base *url.URL) string {
	for _, e := range item.Enclosures {
		if e != nil && (strings.HasPrefix(strings.ToLower(e.Type), "image/") || (e.Type == "" && hasImageExt(e.URL))) {
			if u := imageURL(e.URL, base); u != "" {
				return u
			}
		}
	}
	if u := imageURL(largestMedia(item.Extensions), base); u != "" {
		return u
	}
	if item.ITunesExt != nil {
		if u := imageURL(item.ITunesExt.Image, base); u != "" {
			return u
		}
	}
	if gofeedImg != nil {
		if u := imageURL(gofeedImg.URL, base); u != "" {
			b := body()
			if !b.rejected[u] && !b.rejected[gofeedImg.URL] {
				if d := desc(); d == nil || (!d.rejected[u] && !d.rejected[gofeedImg.URL]) {
					return u
				}
			}
		}
	}
	if b := body(); b.image != "" {
		return b.image
	}
	if d := desc(); d != nil {
		return d.image
	}
	return ""
}

// imageURL returns raw as an absolute http(s) URL fit to be a picture, or "".
func imageURL(raw string, base *url.URL) string {
	abs, host, path, ok := absoluteString(raw, base)
	if !ok || isTrackerURL(host, path) {
		return ""
	}
	return abs
}

// largestMedia returns the URL of the largest Media RSS image: any
// media:content that is an image and any media:thumbnail, at the top level,
// in a media:group or inside a media:content. Sizes come from the width and
// height attributes; a media:content image without sizes counts as larger
// than any sized one, and among equals the first wins.
func largestMedia(exts ext.Extensions) string {
	media := lookupFold(exts, "media")
	if media == nil {
		return ""
	}
	best, bestArea := "", -1
	var visit func(list []ext.Extension, name string)
	visit = func(list []ext.Extension, name string) {
		for _, e := range list {
			u := strings.TrimSpace(e.Attrs["url"])
			isImage := false
			switch name {
			case "thumbnail":
				isImage = true
			case "content":
				medium, typ := strings.ToLower(e.Attrs["medium"]), strings.ToLower(e.Attrs["type"])
				isImage = medium == "image" || strings.HasPrefix(typ, "image/") || (medium == "" && typ == "" && hasImageExt(u))
			}
			if isImage && u != "" {
				w, _ := strconv.Atoi(strings.TrimSpace(e.Attrs["width"]))
				h, _ := strconv.Atoi(strings.TrimSpace(e.Attrs["height"]))
				area := min(max(w, 0), 1<<16) * min(max(h, 0), 1<<16)
				if area == 0 && name == "content" {
					// A media:content without sizes is the picture itself:
					// rank it above thumbnails, which are small by nature.
					area = 1 << 33
				}
				if area > bestArea {
					best, bestArea = u, area
				}
			}
			for _, child := range []string{"content", "thumbnail"} {
				visit(e.Children[child], child)
			}
			if name == "group" {
				visit(e.Children["group"], "group")
			}
		}
	}
	visit(media["content"], "content")
	visit(media["thumbnail"], "thumbnail")
	visit(media["group"], "group")
	return best
}

// hasImageExt reports a URL whose path ends like an image file.
func hasImageExt(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return false
	}
	switch strings.ToLower(path.Ext(u.Path)) {
	case ".jpg", ".jpeg", ".png", ".gif", ".webp", ".avif":
		return true
	}
	return false
}
