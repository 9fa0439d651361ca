-- Stored programs as a migration tool sends them: no DELIMITER lines.
DROP PROCEDURE IF EXISTS sp_copy_events;
CREATE PROCEDURE sp_copy_events(IN p_day DATE)
BEGIN
  DECLARE done INT DEFAULT FALSE;
  DECLARE v_id BIGINT;
  DECLARE v_user INT;
  DECLARE v_amount DECIMAL(10,2);
  DECLARE cur CURSOR FOR
    SELECT id, user_id, amount FROM events WHERE ts >= p_day AND ts < p_day + INTERVAL 1 DAY;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = TRUE;
  OPEN cur;
  read_loop: LOOP
    FETCH cur INTO v_id, v_user, v_amount;
    IF done THEN
      LEAVE read_loop;
    END IF;
    INSERT INTO events_archive (id, user_id, amount) VALUES (v_id, v_user, v_amount);
    DELETE FROM events WHERE id = v_id;
  END LOOP;
  CLOSE cur;
END;

DROP PROCEDURE IF EXISTS sp_seed_calendar;
CREATE PROCEDURE sp_seed_calendar(IN p_from DATE, IN p_days INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < p_days DO
    INSERT INTO calendar (day) VALUES (p_from + INTERVAL i DAY);
    SET i = i + 1;
  END WHILE;
END;

DROP PROCEDURE IF EXISTS sp_purge_events;
CREATE PROCEDURE sp_purge_events(IN p_before DATE)
BEGIN
  DECLARE n INT DEFAULT 1;
  WHILE n > 0 DO
    DELETE FROM events WHERE ts < p_before ORDER BY id LIMIT 5000;
    SET n = ROW_COUNT();
  END WHILE;
END;

CREATE TRIGGER trg_users_country BEFORE INSERT ON users FOR EACH ROW
SET NEW.country = CASE WHEN NEW.country = '' THEN 'US' ELSE UPPER(NEW.country) END;

CREATE EVENT ev_refresh ON SCHEDULE EVERY 1 DAY DO
BEGIN
  CALL sp_refresh_day(CURRENT_DATE - INTERVAL 1 DAY);
END;
