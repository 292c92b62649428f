package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// textWithLinks is the post's text with its media URLs appended, for the
// platforms whose posts carry media as links.
func textWithLinks(c Content) string {
	parts := []string{strings.TrimSpace(c.Text)}
	parts = append(parts, c.Images...)
	parts = append(parts, c.Videos...)
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

func expiryIn(seconds int64) time.Time {
	if seconds <= 0 {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(seconds) * time.Second)
}

// facebook publishes to a Page through the Graph API. At connection the
// user's token is exchanged for a long-lived one, and the first Page the
// user manages becomes the account: its Page token, which does not expire
// when obtained from a long-lived user token, is the account's token.
type facebook struct{}

func (facebook) Identify(ctx context.Context, api *API) (Identity, error) {
	var long struct {
		AccessToken string `json:"access_token"`
	}
	if _, err := api.Do(ctx, "GET", "/oauth/access_token", url.Values{"grant_type": {"fb_exchange_token"},
		"client_id": {api.ClientID}, "client_secret": {api.ClientSecret}, "fb_exchange_token": {api.Token}}, nil, &long); err != nil {
		return Identity{}, fmt.Errorf("long-lived token: %w", err)
	}
	user := &API{Base: api.Base, HTTP: api.HTTP, Token: or(long.AccessToken, api.Token)}
	var pages struct {
		Data []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			AccessToken string `json:"access_token"`
		} `json:"data"`
	}
	if _, err := user.Do(ctx, "GET", "/me/accounts", url.Values{"fields": {"id,name,access_token"}}, nil, &pages); err != nil {
		return Identity{}, err
	}
	if len(pages.Data) == 0 || pages.Data[0].ID == "" || pages.Data[0].AccessToken == "" {
		return Identity{}, errors.New("the Facebook user manages no Page; publishing needs a Page")
	}
	pg := pages.Data[0]
	return Identity{ExternalID: pg.ID, Name: pg.Name, Token: &oauth2.Token{AccessToken: pg.AccessToken, TokenType: "bearer"}}, nil
}

func (facebook) Publish(ctx context.Context, page *API, acct Target, c Content) (Published, error) {
	var out struct {
		ID     string `json:"id"`
		PostID string `json:"post_id"`
	}
	if len(c.Videos) > 0 {
		// A video post: the Page video, captioned with the text.
		if _, err := page.Do(ctx, "POST", "/"+acct.ExternalID+"/videos", nil, url.Values{"file_url": {c.Videos[0]},
			"title": {c.Title}, "description": {c.Text}}, &out); err != nil {
			return Published{}, err
		}
		return Published{ExternalID: out.ID, URL: "https://www.facebook.com/" + acct.ExternalID + "/videos/" + out.ID}, nil
	}
	form := url.Values{"message": {c.Text}}
	// Photos are uploaded unpublished, then attached to one feed post.
	for i, img := range c.Images {
		var ph struct {
			ID string `json:"id"`
		}
		if _, err := page.Do(ctx, "POST", "/"+acct.ExternalID+"/photos", nil, url.Values{"url": {img}, "published": {"false"}}, &ph); err != nil {
			return Published{}, err
		}
		media, _ := json.Marshal(map[string]string{"media_fbid": ph.ID})
		form.Set(fmt.Sprintf("attached_media[%d]", i), string(media))
	}
	if _, err := page.Do(ctx, "POST", "/"+acct.ExternalID+"/feed", nil, form, &out); err != nil {
		return Published{}, err
	}
	return Published{ExternalID: out.ID, URL: "https://www.facebook.com/" + out.ID}, nil
}

// instagram publishes through the Instagram API with Instagram Login:
// a media container (an image, a reel or a carousel), then media_publish.
type instagram struct {
	// poll is the wait between two checks of a container still processing.
	poll time.Duration
}

func (instagram) Identify(ctx context.Context, api *API) (Identity, error) {
	var long struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if _, err := api.Do(ctx, "GET", "/access_token", url.Values{"grant_type": {"ig_exchange_token"},
		"client_secret": {api.ClientSecret}, "access_token": {api.Token}}, nil, &long); err != nil {
		return Identity{}, fmt.Errorf("long-lived token: %w", err)
	}
	me := &API{Base: api.Base, HTTP: api.HTTP, Token: or(long.AccessToken, api.Token)}
	var u struct {
		UserID   json.Number `json:"user_id"`
		ID       string      `json:"id"`
		Username string      `json:"username"`
	}
	if _, err := me.Do(ctx, "GET", "/me", url.Values{"fields": {"user_id,username"}}, nil, &u); err != nil {
		return Identity{}, err
	}
	ext := or(u.UserID.String(), u.ID)
	if ext == "" {
		return Identity{}, errors.New("instagram named no user")
	}
	id := Identity{ExternalID: ext, Name: u.Username}
	if long.AccessToken != "" {
		id.Token = &oauth2.Token{AccessToken: long.AccessToken, TokenType: long.TokenType, Expiry: expiryIn(long.ExpiresIn)}
	}
	return id, nil
}

// Renew trades a long-lived token for a new one (ig_refresh_token).
func (instagram) Renew(ctx context.Context, api *API) (*oauth2.Token, error) {
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if _, err := api.Do(ctx, "GET", "/refresh_access_token", url.Values{"grant_type": {"ig_refresh_token"}, "access_token": {api.Token}}, nil, &out); err != nil {
		return nil, err
	}
	return &oauth2.Token{AccessToken: out.AccessToken, TokenType: out.TokenType, Expiry: expiryIn(out.ExpiresIn)}, nil
}

func (ig instagram) Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error) {
	n := len(c.Images) + len(c.Videos)
	if n == 0 {
		return Published{}, errNeedsMedia("instagram", "an image or a video")
	}
	container := func(form url.Values) (string, error) {
		var out struct {
			ID string `json:"id"`
		}
		_, err := api.Do(ctx, "POST", "/"+acct.ExternalID+"/media", nil, form, &out)
		return out.ID, err
	}
	var creation string
	var err error
	switch {
	case n == 1 && len(c.Images) == 1:
		creation, err = container(url.Values{"image_url": {c.Images[0]}, "caption": {c.Text}})
	case n == 1:
		if creation, err = container(url.Values{"media_type": {"REELS"}, "video_url": {c.Videos[0]}, "caption": {c.Text}}); err == nil {
			err = ig.ready(ctx, api, creation)
		}
	default:
		if n > 10 {
			return Published{}, errors.New("instagram carousels take at most 10 items")
		}
		var children []string
		for _, img := range c.Images {
			id, err := container(url.Values{"image_url": {img}, "is_carousel_item": {"true"}})
			if err != nil {
				return Published{}, err
			}
			children = append(children, id)
		}
		for _, v := range c.Videos {
			id, err := container(url.Values{"media_type": {"VIDEO"}, "video_url": {v}, "is_carousel_item": {"true"}})
			if err != nil {
				return Published{}, err
			}
			children = append(children, id)
		}
		if creation, err = container(url.Values{"media_type": {"CAROUSEL"}, "children": {strings.Join(children, ",")}, "caption": {c.Text}}); err == nil {
			err = ig.ready(ctx, api, creation)
		}
	}
	if err != nil {
		return Published{}, err
	}
	var pub struct {
		ID string `json:"id"`
	}
	if _, err := api.Do(ctx, "POST", "/"+acct.ExternalID+"/media_publish", nil, url.Values{"creation_id": {creation}}, &pub); err != nil {
		return Published{}, err
	}
	var link struct {
		Permalink string `json:"permalink"`
	}
	// The permalink is a courtesy: the post is published without it.
	_, _ = api.Do(ctx, "GET", "/"+pub.ID, url.Values{"fields": {"permalink"}}, nil, &link)
	return Published{ExternalID: pub.ID, URL: link.Permalink}, nil
}

// ready waits until a container has been processed (videos take a while).
func (ig instagram) ready(ctx context.Context, api *API, container string) error {
	for {
		var st struct {
			StatusCode string `json:"status_code"`
		}
		if _, err := api.Do(ctx, "GET", "/"+container, url.Values{"fields": {"status_code"}}, nil, &st); err != nil {
			return err
		}
		switch st.StatusCode {
		case "FINISHED", "PUBLISHED", "":
			return nil
		case "ERROR", "EXPIRED":
			return fmt.Errorf("instagram could not process the media (%s)", st.StatusCode)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(ig.poll):
		}
	}
}

// twitter posts through the X API v2 (POST /2/tweets); media go as links.
type twitter struct{}

func (twitter) Identify(ctx context.Context, api *API) (Identity, error) {
	var me struct {
		Data struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Username string `json:"username"`
		} `json:"data"`
	}
	if _, err := api.Do(ctx, "GET", "/2/users/me", nil, nil, &me); err != nil {
		return Identity{}, err
	}
	if me.Data.ID == "" {
		return Identity{}, errors.New("x named no user")
	}
	return Identity{ExternalID: me.Data.ID, Name: or(me.Data.Name, me.Data.Username), Extra: map[string]string{"username": me.Data.Username}}, nil
}

func (twitter) Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error) {
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if _, err := api.Do(ctx, "POST", "/2/tweets", nil, map[string]any{"text": textWithLinks(c)}, &out); err != nil {
		return Published{}, err
	}
	u := "https://x.com/i/web/status/" + out.Data.ID
	if name := acct.Extra["username"]; name != "" {
		u = "https://x.com/" + name + "/status/" + out.Data.ID
	}
	return Published{ExternalID: out.Data.ID, URL: u}, nil
}

// linkedin shares as the member through the UGC Posts API; a media URL
// is shared as an article link.
type linkedin struct{}

func (linkedin) Identify(ctx context.Context, api *API) (Identity, error) {
	var me struct {
		Sub  string `json:"sub"`
		Name string `json:"name"`
	}
	if _, err := api.Do(ctx, "GET", "/v2/userinfo", nil, nil, &me); err != nil {
		return Identity{}, err
	}
	if me.Sub == "" {
		return Identity{}, errors.New("linkedin named no member")
	}
	return Identity{ExternalID: me.Sub, Name: me.Name}, nil
}

func (linkedin) Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error) {
	share := map[string]any{"shareCommentary": map[string]string{"text": c.Text}, "shareMediaCategory": "NONE"}
	if media := append(append([]string(nil), c.Images...), c.Videos...); len(media) > 0 {
		share["shareMediaCategory"] = "ARTICLE"
		share["media"] = []map[string]any{{"status": "READY", "originalUrl": media[0], "title": map[string]string{"text": c.Title}}}
	}
	body := map[string]any{
		"author":          "urn:li:person:" + acct.ExternalID,
		"lifecycleState":  "PUBLISHED",
		"specificContent": map[string]any{"com.linkedin.ugc.ShareContent": share},
		"visibility":      map[string]string{"com.linkedin.ugc.MemberNetworkVisibility": "PUBLIC"},
	}
	var out struct {
		ID string `json:"id"`
	}
	h, err := api.Do(ctx, "POST", "/v2/ugcPosts", nil, body, &out, "X-Restli-Protocol-Version", "2.0.0")
	if err != nil {
		return Published{}, err
	}
	id := or(h.Get("X-RestLi-Id"), out.ID)
	return Published{ExternalID: id, URL: "https://www.linkedin.com/feed/update/" + id}, nil
}

// tiktok posts through the Content Posting API, which pulls the media
// from their URLs: a video, or a photo post.
type tiktok struct{}

// tiktokError is the error member every TikTok answer carries ("ok" on success).
type tiktokError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e tiktokError) err() error {
	if e.Code == "" || e.Code == "ok" {
		return nil
	}
	return &PlatformError{Status: http.StatusOK, Message: e.Code + ": " + e.Message}
}

func (tiktok) Identify(ctx context.Context, api *API) (Identity, error) {
	var me struct {
		Data struct {
			User struct {
				OpenID      string `json:"open_id"`
				DisplayName string `json:"display_name"`
			} `json:"user"`
		} `json:"data"`
		Error tiktokError `json:"error"`
	}
	if _, err := api.Do(ctx, "GET", "/v2/user/info/", url.Values{"fields": {"open_id,display_name"}}, nil, &me); err != nil {
		return Identity{}, err
	}
	if err := me.Error.err(); err != nil {
		return Identity{}, err
	}
	if me.Data.User.OpenID == "" {
		return Identity{}, errors.New("tiktok named no user")
	}
	return Identity{ExternalID: me.Data.User.OpenID, Name: me.Data.User.DisplayName}, nil
}

func (tiktok) Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error) {
	var out struct {
		Data struct {
			PublishID string `json:"publish_id"`
		} `json:"data"`
		Error tiktokError `json:"error"`
	}
	var err error
	switch {
	case len(c.Videos) > 0:
		_, err = api.Do(ctx, "POST", "/v2/post/publish/video/init/", nil, map[string]any{
			"post_info":   map[string]any{"title": c.Text, "privacy_level": "PUBLIC_TO_EVERYONE"},
			"source_info": map[string]any{"source": "PULL_FROM_URL", "video_url": c.Videos[0]},
		}, &out)
	case len(c.Images) > 0:
		_, err = api.Do(ctx, "POST", "/v2/post/publish/content/init/", nil, map[string]any{
			"post_info":   map[string]any{"title": c.Title, "description": c.Text, "privacy_level": "PUBLIC_TO_EVERYONE"},
			"source_info": map[string]any{"source": "PULL_FROM_URL", "photo_cover_index": 0, "photo_images": c.Images},
			"post_mode":   "DIRECT_POST",
			"media_type":  "PHOTO",
		}, &out)
	default:
		return Published{}, errNeedsMedia("tiktok", "a video or images")
	}
	if err != nil {
		return Published{}, err
	}
	if err := out.Error.err(); err != nil {
		return Published{}, err
	}
	// TikTok publishes asynchronously; the post has no URL until it is processed.
	return Published{ExternalID: out.Data.PublishID}, nil
}

// youtube uploads the post's video with the Data API's resumable
// videos.insert: the metadata first, then the bytes, streamed from the
// media URL.
type youtube struct{}

func (youtube) Identify(ctx context.Context, api *API) (Identity, error) {
	var out struct {
		Items []struct {
			ID      string `json:"id"`
			Snippet struct {
				Title string `json:"title"`
			} `json:"snippet"`
		} `json:"items"`
	}
	if _, err := api.Do(ctx, "GET", "/youtube/v3/channels", url.Values{"part": {"snippet"}, "mine": {"true"}}, nil, &out); err != nil {
		return Identity{}, err
	}
	if len(out.Items) == 0 || out.Items[0].ID == "" {
		return Identity{}, errors.New("the Google account has no YouTube channel")
	}
	return Identity{ExternalID: out.Items[0].ID, Name: out.Items[0].Snippet.Title}, nil
}

// maxVideoBytes bounds a video streamed to YouTube.
const maxVideoBytes = 2 << 30

func (youtube) Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error) {
	if len(c.Videos) == 0 {
		return Published{}, errNeedsMedia("youtube", "a video")
	}
	if api.Media == nil {
		return Published{}, errors.New("no media client to fetch the video with")
	}
	src, err := http.NewRequestWithContext(ctx, "GET", c.Videos[0], nil)
	if err != nil {
		return Published{}, err
	}
	video, err := api.Media.Do(src)
	if err != nil {
		return Published{}, fmt.Errorf("the video could not be fetched: %w", err)
	}
	defer video.Body.Close()
	if video.StatusCode != http.StatusOK {
		return Published{}, fmt.Errorf("the video could not be fetched: %s", video.Status)
	}
	if video.ContentLength > maxVideoBytes {
		return Published{}, errors.New("the video is larger than 2 GiB")
	}
	ct := video.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "video/") {
		ct = "video/*"
	}
	meta := map[string]any{
		"snippet": map[string]any{"title": truncate(c.Title, 100), "description": truncate(c.Text, 5000), "categoryId": "22"},
		"status":  map[string]any{"privacyStatus": "public"},
	}
	hdr := []string{"X-Upload-Content-Type", ct}
	if video.ContentLength > 0 {
		hdr = append(hdr, "X-Upload-Content-Length", fmt.Sprint(video.ContentLength))
	}
	h, err := api.Do(ctx, "POST", "/upload/youtube/v3/videos", url.Values{"uploadType": {"resumable"}, "part": {"snippet,status"}}, meta, nil, hdr...)
	if err != nil {
		return Published{}, err
	}
	session := h.Get("Location")
	if session == "" {
		return Published{}, errors.New("youtube gave no upload session")
	}
	put, err := http.NewRequestWithContext(ctx, "PUT", session, http.MaxBytesReader(nil, video.Body, maxVideoBytes))
	if err != nil {
		return Published{}, err
	}
	put.ContentLength = video.ContentLength
	put.Header.Set("Content-Type", ct)
	put.Header.Set("Authorization", "Bearer "+api.Token)
	var out struct {
		ID string `json:"id"`
	}
	if _, err := api.send(put, &out); err != nil {
		return Published{}, err
	}
	return Published{ExternalID: out.ID, URL: "https://www.youtube.com/watch?v=" + out.ID}, nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
