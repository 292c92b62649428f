package social_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/apitest/socialtest"
	"github.com/plinth-dev/plinth/internal/oauth"
)

// Publishing to three platforms where one fails: the post is
// partially_published with one result per platform; when all fail it is
// failed; publishing again retries only what failed.
func TestPublishPartialAndFailed(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"facebook", "twitter", "linkedin"}, apitest.WithWorkers())
	p := env.NewProject("build")
	for _, name := range []string{"facebook", "twitter", "linkedin"} {
		socialtest.Connect(t, env, p.Key, fakes[name])
	}
	fakes["twitter"].FailPublish(func(socialtest.Request) (int, string) {
		return 403, "You are not allowed to create a Tweet with duplicate content."
	})

	post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{
		"title": "Spring menu", "content": "Our spring menu is here.", "platforms": []string{"twitter", "linkedin", "facebook"},
	}).Expect(t, 201).JSON(t)
	if post["status"] != "draft" || jsonString(post["platforms"]) != `["facebook","twitter","linkedin"]` || jsonString(post["results"]) != `[]` {
		t.Fatalf("created: %v", post)
	}
	started := env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202).JSON(t)
	if started["status"] != "publishing" {
		t.Fatalf("publish answered %v", started)
	}
	done := waitPost(t, env, p.Key, post["id"])
	if done["status"] != "partially_published" || done["published_at"] == nil {
		t.Fatalf("post: %v", done)
	}
	rs := results(t, done)
	if len(done["results"].([]any)) != 3 {
		t.Fatalf("results: %v", done["results"])
	}
	tw, li, fb := rs["twitter"], rs["linkedin"], rs["facebook"]
	if tw["status"] != "failed" || !strings.Contains(tw["error"].(string), "duplicate content") || tw["external_id"] != nil || tw["url"] != nil {
		t.Fatalf("twitter: %v", tw)
	}
	if li["status"] != "published" || !strings.HasPrefix(li["external_id"].(string), "urn:li:share:") ||
		li["url"] != "https://www.linkedin.com/feed/update/"+li["external_id"].(string) || li["error"] != nil {
		t.Fatalf("linkedin: %v", li)
	}
	if fb["status"] != "published" || fb["url"] != "https://www.facebook.com/"+fb["external_id"].(string) {
		t.Fatalf("facebook: %v", fb)
	}
	for _, r := range rs {
		if len(r) != 6 || r["account_id"] == nil {
			t.Fatalf("result shape: %v", r)
		}
	}
	// Each platform got its own request shape.
	lp := fakes["linkedin"].Posts()
	if len(lp) != 1 || lp[0].Path != "/v2/ugcPosts" || lp[0].Header.Get("X-Restli-Protocol-Version") != "2.0.0" ||
		lp[0].JSON["author"] != "urn:li:person:782bbtaQ" || lp[0].JSON["lifecycleState"] != "PUBLISHED" ||
		!strings.Contains(jsonString(lp[0].JSON["specificContent"]), `"shareCommentary":{"text":"Our spring menu is here."}`) {
		t.Fatalf("linkedin request: %+v", lp)
	}
	fp := fakes["facebook"].Posts()
	if len(fp) != 1 || fp[0].Path != "/1001/feed" || fp[0].Form.Get("message") != "Our spring menu is here." || !strings.HasPrefix(fp[0].Token, "page-token-") {
		t.Fatalf("facebook request: %+v", fp)
	}
	tp := fakes["twitter"].Posts()
	if len(tp) != 1 || tp[0].Path != "/2/tweets" || tp[0].JSON["text"] != "Our spring menu is here." {
		t.Fatalf("twitter request: %+v", tp)
	}

	// Publishing again retries the failed platform only.
	fakes["twitter"].FailPublish(nil)
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202)
	again := waitPost(t, env, p.Key, post["id"])
	if again["status"] != "published" || results(t, again)["twitter"]["status"] != "published" {
		t.Fatalf("retry: %v", again)
	}
	if len(fakes["linkedin"].Posts()) != 1 || len(fakes["facebook"].Posts()) != 1 || len(fakes["twitter"].Posts()) != 2 {
		t.Fatal("the retry published again where it had succeeded")
	}
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Problem(t, 409, "conflict")
	env.Do("PATCH", fmt.Sprintf("/v1/social-posts/%v", post["id"]), p.Key, map[string]any{"title": "x"}).Problem(t, 409, "conflict")

	// Every platform refusing: failed.
	for _, f := range fakes {
		f.FailPublish(func(socialtest.Request) (int, string) { return 500, "internal error" })
	}
	bad := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": "Down", "content": "x", "platforms": []string{"facebook", "twitter", "linkedin"}}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", bad["id"]), p.Key, nil).Expect(t, 202)
	failed := waitPost(t, env, p.Key, bad["id"])
	if failed["status"] != "failed" || failed["published_at"] != nil || len(failed["results"].([]any)) != 3 {
		t.Fatalf("all failing: %v", failed)
	}
	for _, r := range results(t, failed) {
		if r["status"] != "failed" || r["error"] == nil {
			t.Fatalf("result: %v", r)
		}
	}
}

// Every adapter makes its platform's publish requests: a post with images
// and one with a video, to all six platforms.
func TestPublishEveryPlatform(t *testing.T) {
	t.Parallel()
	video := []byte("not really an mp4, but bytes all the same")
	var fetched atomic.Int32
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(video)
	}))
	defer media.Close()
	all := []string{"facebook", "instagram", "twitter", "tiktok", "linkedin", "youtube"}
	env, fakes := setup(t, all, apitest.WithWorkers())
	p := env.NewProject("build")
	accounts := map[string]string{}
	for _, name := range all {
		accounts[name] = socialtest.Connect(t, env, p.Key, fakes[name])
	}
	list := env.Do("GET", "/v1/social-accounts?limit=4", p.Key, nil).Expect(t, 200).JSON(t)
	if len(list["data"].([]any)) != 4 || list["has_more"] != true {
		t.Fatalf("page 1: %v", list)
	}
	rest := env.Do("GET", "/v1/social-accounts?limit=4&cursor="+list["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	if len(rest["data"].([]any)) != 2 || rest["has_more"] != false {
		t.Fatalf("page 2: %v", rest)
	}
	if first := list["data"].([]any)[0].(map[string]any); first["id"] != accounts["youtube"] {
		t.Fatalf("newest first: %v", first)
	}

	images := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{
		"title": "Gallery", "content": "New work", "platforms": all,
		"media": []string{"https://cdn.test/a.jpg", "https://cdn.test/b.png"},
	}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", images["id"]), p.Key, nil).Expect(t, 202)
	done := waitPost(t, env, p.Key, images["id"])
	rs := results(t, done)
	if done["status"] != "partially_published" || rs["youtube"]["status"] != "failed" || rs["youtube"]["error"] != "youtube posts need a video" {
		t.Fatalf("images post: %v", done)
	}
	for _, name := range []string{"facebook", "instagram", "twitter", "tiktok", "linkedin"} {
		if rs[name]["status"] != "published" || rs[name]["account_id"] != accounts[name] {
			t.Fatalf("%s: %v", name, rs[name])
		}
	}
	// Facebook: two unpublished photos attached to one feed post.
	fp := fakes["facebook"].Posts()
	if len(fp) != 3 || fp[0].Path != "/1001/photos" || fp[0].Form.Get("url") != "https://cdn.test/a.jpg" || fp[0].Form.Get("published") != "false" ||
		fp[2].Path != "/1001/feed" || !strings.Contains(fp[2].Form.Get("attached_media[1]"), `"media_fbid"`) {
		t.Fatalf("facebook: %+v", fp)
	}
	// Instagram: a carousel of two items, then media_publish, with a permalink.
	ip := fakes["instagram"].Posts()
	if len(ip) != 4 || ip[0].Form.Get("is_carousel_item") != "true" || ip[2].Form.Get("media_type") != "CAROUSEL" ||
		len(strings.Split(ip[2].Form.Get("children"), ",")) != 2 || ip[2].Form.Get("caption") != "New work" ||
		ip[3].Path != "/17841400000000001/media_publish" || !strings.HasPrefix(ip[3].Form.Get("creation_id"), "container-") ||
		!strings.HasPrefix(rs["instagram"]["url"].(string), "https://www.instagram.com/p/") || !strings.HasPrefix(ip[0].Token, "long-") {
		t.Fatalf("instagram: %+v / %v", ip, rs["instagram"])
	}
	// X: the text with the media links.
	if tp := fakes["twitter"].Posts(); tp[0].JSON["text"] != "New work\nhttps://cdn.test/a.jpg\nhttps://cdn.test/b.png" ||
		rs["twitter"]["url"] != "https://x.com/acmestudio/status/"+rs["twitter"]["external_id"].(string) {
		t.Fatalf("twitter: %+v", tp)
	}
	// TikTok: a photo post pulled from the URLs.
	if kp := fakes["tiktok"].Posts(); kp[0].Path != "/v2/post/publish/content/init/" || kp[0].JSON["media_type"] != "PHOTO" ||
		!strings.Contains(jsonString(kp[0].JSON["source_info"]), `"photo_images":["https://cdn.test/a.jpg","https://cdn.test/b.png"]`) ||
		rs["tiktok"]["url"] != nil {
		t.Fatalf("tiktok: %+v", kp)
	}
	// LinkedIn: the first media as an article link.
	if lp := fakes["linkedin"].Posts(); !strings.Contains(jsonString(lp[0].JSON), `"shareMediaCategory":"ARTICLE"`) ||
		!strings.Contains(jsonString(lp[0].JSON), `"originalUrl":"https://cdn.test/a.jpg"`) {
		t.Fatalf("linkedin: %+v", lp)
	}
	if n := len(fakes["youtube"].Posts()); n != 0 {
		t.Fatalf("youtube was asked %d times for a post it cannot take", n)
	}

	clip := media.URL + "/clip.mp4"
	vid := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{
		"title": "Behind the scenes", "content": "A day at the studio", "account_ids": []string{accounts["youtube"], accounts["instagram"], accounts["tiktok"], accounts["facebook"]},
		"media": []string{clip},
	}).Expect(t, 201).JSON(t)
	if jsonString(vid["platforms"]) != `["facebook","instagram","tiktok","youtube"]` {
		t.Fatalf("platforms from accounts: %v", vid["platforms"])
	}
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", vid["id"]), p.Key, nil).Expect(t, 202)
	done = waitPost(t, env, p.Key, vid["id"])
	if done["status"] != "published" || len(done["results"].([]any)) != 4 {
		t.Fatalf("video post: %v", done)
	}
	rs = results(t, done)
	// YouTube: resumable videos.insert with the metadata, then the bytes.
	yp := fakes["youtube"].Posts()
	if len(yp) != 2 || yp[0].Path != "/upload/youtube/v3/videos" || yp[0].Query.Get("uploadType") != "resumable" ||
		yp[0].Query.Get("part") != "snippet,status" || yp[0].Header.Get("X-Upload-Content-Type") != "video/mp4" ||
		!strings.Contains(jsonString(yp[0].JSON), `"title":"Behind the scenes"`) || !strings.Contains(jsonString(yp[0].JSON), `"privacyStatus":"public"`) ||
		yp[1].Method != "PUT" || string(yp[1].Body) != string(video) || yp[1].Token == "" ||
		rs["youtube"]["url"] != "https://www.youtube.com/watch?v="+rs["youtube"]["external_id"].(string) || fetched.Load() != 1 {
		t.Fatalf("youtube: %+v / %v", yp, rs["youtube"])
	}
	// Instagram: a reel; TikTok: a video pulled from its URL; Facebook: a Page video.
	ip = fakes["instagram"].Posts()[4:]
	if ip[0].Form.Get("media_type") != "REELS" || ip[0].Form.Get("video_url") != clip {
		t.Fatalf("instagram reel: %+v", ip)
	}
	if kp := fakes["tiktok"].Posts()[1]; kp.Path != "/v2/post/publish/video/init/" || !strings.Contains(jsonString(kp.JSON), `"video_url":"`+clip+`"`) {
		t.Fatalf("tiktok video: %+v", kp)
	}
	if fv := fakes["facebook"].Posts()[3]; fv.Path != "/1001/videos" || fv.Form.Get("file_url") != clip || fv.Form.Get("description") != "A day at the studio" {
		t.Fatalf("facebook video: %+v", fv)
	}
	if len(fakes["twitter"].Posts()) != 1 || len(fakes["linkedin"].Posts()) != 1 {
		t.Fatal("a post went to platforms it did not name")
	}
}

// Tokens are refreshed before use and the refreshed ones stored; a refused
// refresh makes the account expired, a refused token revoked.
func TestTokenRefresh(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"}, apitest.WithWorkers())
	tw := fakes["twitter"]
	tw.ExpiresIn = 30 // within the minute before expiry when tokens are refreshed
	p := env.NewProject("build")
	acc := socialtest.Connect(t, env, p.Key, tw)
	sealer := oauth.NewSealer(env.Server.Central.Secret())
	stored := func() string {
		var tok []byte
		query(t, p, `SELECT token FROM social_accounts`, nil, &tok)
		plain, err := sealer.Open(tok, []byte("social-account:"+p.ID+":twitter:2244994945"))
		if err != nil {
			t.Fatal(err)
		}
		return string(plain)
	}
	publish := func(title string) map[string]any {
		post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": title, "content": title, "platforms": []string{"twitter"}}).Expect(t, 201).JSON(t)
		env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202)
		return waitPost(t, env, p.Key, post["id"])
	}

	if post := publish("one"); post["status"] != "published" {
		t.Fatalf("publish: %v", post)
	}
	reqs := tw.TokenRequests()
	if len(reqs) != 2 || reqs[1].Get("grant_type") != "refresh_token" || reqs[1].Get("refresh_token") != "rt-twitter-1" {
		t.Fatalf("token requests: %v", reqs)
	}
	if got := tw.Posts(); got[0].Token != "at-twitter-2" {
		t.Fatalf("published with %q, want the refreshed token", got[0].Token)
	}
	if s := stored(); !strings.Contains(s, `"access_token":"at-twitter-2"`) || !strings.Contains(s, `"refresh_token":"rt-twitter-2"`) {
		t.Fatalf("stored after refresh: %s", s)
	}
	// The rotated refresh token is the one used next.
	publish("two")
	if reqs := tw.TokenRequests(); len(reqs) != 3 || reqs[2].Get("refresh_token") != "rt-twitter-2" || tw.Posts()[1].Token != "at-twitter-3" {
		t.Fatalf("second refresh: %v", reqs)
	}

	// The platform refuses the refresh: the account is expired.
	tw.Revoke()
	post := publish("three")
	r := results(t, post)["twitter"]
	if post["status"] != "failed" || !strings.Contains(fmt.Sprint(r["error"]), "reconnect") || r["account_id"] != acc {
		t.Fatalf("refused refresh: %v", post)
	}
	if a := env.Do("GET", "/v1/social-accounts", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)[0].(map[string]any); a["status"] != "expired" {
		t.Fatalf("account: %v", a)
	}
	if len(tw.Posts()) != 2 {
		t.Fatal("a post was sent with an expired account")
	}

	// Reconnected, with a long-lived token that the platform then revokes: revoked.
	tw.ExpiresIn = 3600
	socialtest.Connect(t, env, p.Key, tw)
	tw.Revoke()
	post = publish("four")
	if post["status"] != "failed" || !strings.Contains(results(t, post)["twitter"]["error"].(string), "Invalid OAuth access token") {
		t.Fatalf("revoked token: %v", post)
	}
	if a := env.Do("GET", "/v1/social-accounts", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any)[0].(map[string]any); a["status"] != "revoked" {
		t.Fatalf("account: %v", a)
	}
}

// Instagram renews its long-lived tokens through its API (no refresh
// token): in a token's last week, before use.
func TestInstagramRenewal(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"instagram"}, apitest.WithWorkers())
	ig := fakes["instagram"]
	ig.LongLivedExpiresIn = 3600
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, ig)
	post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": "x", "content": "x", "platforms": []string{"instagram"},
		"media": []string{"https://cdn.test/a.jpg"}}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202)
	if done := waitPost(t, env, p.Key, post["id"]); done["status"] != "published" {
		t.Fatalf("post: %v", done)
	}
	var renewed bool
	for _, r := range ig.Requests() {
		if r.Path == "/refresh_access_token" && r.Query.Get("grant_type") == "ig_refresh_token" && r.Query.Get("access_token") == "long-at-instagram-1" {
			renewed = true
		}
	}
	if posts := ig.Posts(); !renewed || posts[0].Token != "long-long-at-instagram-1" {
		t.Fatalf("renewed %v; published with %q", renewed, posts[0].Token)
	}
	var tok []byte
	query(t, p, `SELECT token FROM social_accounts`, nil, &tok)
	plain, err := oauth.NewSealer(env.Server.Central.Secret()).Open(tok, []byte("social-account:"+p.ID+":instagram:17841400000000001"))
	if err != nil || !strings.Contains(string(plain), `"access_token":"long-long-at-instagram-1"`) {
		t.Fatalf("stored: %s %v", plain, err)
	}
}

// A video the server must fetch itself (YouTube) is never fetched from an
// internal address outside dev mode.
func TestMediaFetchIsGuarded(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fetched.Add(1) }))
	defer internal.Close()
	env, fakes := setup(t, []string{"youtube"}, apitest.WithWorkers(), apitest.WithEnv("PLINTH_DEV", "0"))
	p := env.NewProject("build")
	socialtest.Connect(t, env, p.Key, fakes["youtube"])
	post := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"title": "x", "platforms": []string{"youtube"},
		"media": []string{internal.URL + "/admin/backup.mp4"}}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/social-posts/%v/publish", post["id"]), p.Key, nil).Expect(t, 202)
	done := waitPost(t, env, p.Key, post["id"])
	if r := results(t, done)["youtube"]; done["status"] != "failed" || !strings.Contains(fmt.Sprint(r["error"]), "address not allowed") {
		t.Fatalf("post: %v", done)
	}
	if fetched.Load() != 0 || len(fakes["youtube"].Posts()) != 0 {
		t.Fatalf("fetched %d times; %d uploads", fetched.Load(), len(fakes["youtube"].Posts()))
	}
}
